//! The subscriber side of a fake client: pub/sub events from the engine's outbox, through faults.
//!
//! A [`SubscriberDoor`] holds its own engine connection (a RESP2 connection in subscribed mode can
//! run nothing else, which is why a client such as the lock keeps subscribers apart). A
//! background tokio task waits on the engine's waker for that connection and on the plan's next
//! scheduled change, and turns what it sees into [`SubscriberEvent`]s: messages (dropped, or held
//! through a pause, as the plan says), `Lost` when the connection goes (a subscriber outage, a
//! server restart or failover) and `Restored` once it is back with every channel subscribed
//! again. Since the task only waits on wakers and tokio timers, it runs under paused time.
//!
//! The events and errors are the fake's own types: a client library adapts them to its own
//! subscriber interface (the lock's crate does, in `lock_core::fake::FakeSubscriber`), so the
//! delivery rules, faults included, are written once, here.

use crate::engine::{ClientId, Engine};
use crate::fault::{DeliveryFate, FaultEventKind, NodeId};
use crate::inprocess::link::{SharedEngine, lock, past_pauses, sleep_until_clock};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::BTreeSet;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use tokio::sync::{Notify, mpsc};

/// What a [`SubscriberDoor`] hands its user, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubscriberEvent {
    /// A message published on a subscribed channel.
    Message {
        /// The channel.
        channel: Bytes,
        /// The payload.
        payload: Bytes,
    },
    /// The subscriber connection was lost; messages published meanwhile are not delivered.
    Lost,
    /// The subscriber connection is back and every channel is subscribed again.
    Restored,
}

/// Why a subscription change failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubscriberError {
    /// The node has crashed: nothing was sent.
    #[error("{0}")]
    Crashed(String),
    /// The server refused the command, with its error text.
    #[error("{0}")]
    Server(String),
}

/// The pub/sub side of client process `node` on the fake engine. Create it inside a tokio
/// runtime; dropping it stops its task and closes its connection. See the [module docs](self).
pub struct SubscriberDoor {
    inner: Arc<Inner>,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<SubscriberEvent>>,
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

impl SubscriberDoor {
    /// A subscriber of `node` on `engine`, connected now.
    pub fn new(engine: SharedEngine, node: NodeId) -> SubscriberDoor {
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
        SubscriberDoor {
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

    /// Subscribes to `channel` (remembered while the connection is down, and subscribed again
    /// when it is back).
    pub async fn subscribe(&self, channel: &Bytes) -> Result<(), SubscriberError> {
        self.change(channel, true).await
    }

    /// Unsubscribes from `channel`.
    pub async fn unsubscribe(&self, channel: &Bytes) -> Result<(), SubscriberError> {
        self.change(channel, false).await
    }

    /// The next event; cancel-safe. Once the node has crashed, none comes.
    pub async fn next_event(&self) -> SubscriberEvent {
        let mut events = self.events.lock().await;
        match events.recv().await {
            Some(event) => event,
            None => std::future::pending().await,
        }
    }

    async fn change(&self, channel: &Bytes, subscribe: bool) -> Result<(), SubscriberError> {
        let node = self.inner.node;
        // A paused process sends nothing until its pause ends.
        past_pauses(&self.inner.engine, |engine, now, _| {
            engine
                .fault_plan()
                .paused_until(node, now)
                .map_or(Ok(()), Err)
        })
        .await;
        let mut engine = lock(&self.inner.engine);
        let mut state = self.inner.state();
        let now = engine.clock_now();
        if state.crashed
            || engine
                .fault_plan()
                .crash_time(node)
                .is_some_and(|t| t <= now)
        {
            return Err(SubscriberError::Crashed(format!("{node} has crashed")));
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
                return Err(SubscriberError::Server(e.into_owned()));
            }
        }
        // Down: remembered, and subscribed when the connection is back.
        drop(state);
        drop(engine);
        self.inner.changed.notify_one();
        Ok(())
    }
}

impl Drop for SubscriberDoor {
    fn drop(&mut self) {
        self.task.abort();
        let client = self.inner.state().client.take();
        if let Some(c) = client {
            lock(&self.inner.engine).disconnect(c);
        }
    }
}

/// What the task does at one moment: bring the connection in line with the plan, then hand over
/// the messages waiting in the outbox.
enum Step {
    Deliver(SubscriberEvent),
    Stop,
}

/// What one look at the engine found for the task to do, decided under one lock of it.
struct Round {
    steps: Vec<Step>,
    /// The messages are held by the node's pause until then.
    hold_until: Option<i64>,
    /// When something scheduled next changes for the subscriber.
    next_change: Option<i64>,
}

async fn run(inner: Arc<Inner>, events: mpsc::UnboundedSender<SubscriberEvent>) {
    let mut lost = false;
    loop {
        let round = {
            let mut engine = lock(&inner.engine);
            engine.apply_due_server_faults();
            let now = engine.clock_now();
            let mut steps = Vec::new();
            inner.follow_plan(&mut engine, now, &mut lost, &mut steps);
            let hold_until = inner.take_messages(&mut engine, now, &mut steps);
            let next_change = [
                engine.fault_plan().next_subscriber_change(inner.node, now),
                engine.next_server_fault_time(),
            ];
            let next_change = next_change.into_iter().flatten().min();
            Round {
                steps,
                hold_until,
                next_change,
            }
        };
        if let Some(t) = round.hold_until {
            // Paused: what arrived reaches the process when it runs again.
            sleep_until_clock(&inner.engine, t).await;
        }
        for step in round.steps {
            match step {
                Step::Deliver(event) => {
                    if events.send(event).is_err() {
                        return;
                    }
                }
                Step::Stop => return,
            }
        }
        inner.wait_for_change(round.next_change).await;
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, SubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the connection in line with the plan at `now`: a crash ends it, an outage or a closed
    /// connection loses it, the end of the outage restores it with every channel.
    fn follow_plan(&self, engine: &mut Engine, now: i64, lost: &mut bool, steps: &mut Vec<Step>) {
        let node = self.node;
        let plan_down = engine.fault_plan().subscriber_down(node, now).is_some();
        let crash = engine
            .fault_plan()
            .crash_time(node)
            .is_some_and(|t| t <= now);
        let mut state = self.state();
        if crash {
            if let Some(c) = state.client.take() {
                engine.disconnect(c);
            }
            state.crashed = true;
            steps.push(Step::Stop);
            return;
        }
        let connected = state.client.is_some_and(|c| engine.is_connected(c));
        let record =
            |engine: &mut Engine, kind| engine.fault_plan_mut().record(now, Some(node), None, kind);
        if (plan_down || !connected) && !*lost {
            if let Some(c) = state.client.take() {
                engine.disconnect(c);
            }
            *lost = true;
            record(engine, FaultEventKind::SubscriberLost);
            steps.push(Step::Deliver(SubscriberEvent::Lost));
        }
        if !plan_down && *lost {
            let c = engine.connect_as(node);
            for ch in &state.channels {
                engine.execute(c, &[Bytes::from_static(b"SUBSCRIBE"), ch.clone()]);
            }
            state.client = Some(c);
            *lost = false;
            record(engine, FaultEventKind::SubscriberRestored);
            steps.push(Step::Deliver(SubscriberEvent::Restored));
        }
    }

    /// Takes the messages waiting in the outbox (none once crashed) through the plan: delivered,
    /// lost, or held by the node's pause (then it returns until when).
    fn take_messages(&self, engine: &mut Engine, now: i64, steps: &mut Vec<Step>) -> Option<i64> {
        let client = self.state().client?;
        let mut hold_until: Option<i64> = None;
        while let Some(out) = engine.pop_outbox(client) {
            let Some(event) = message_event(out.frame) else {
                continue;
            };
            match engine.fault_plan_mut().admit_delivery(self.node, now) {
                DeliveryFate::Deliver => steps.push(Step::Deliver(event)),
                DeliveryFate::Drop => {}
                DeliveryFate::HoldUntil(t) => {
                    hold_until = Some(hold_until.map_or(t, |h| h.max(t)));
                    steps.push(Step::Deliver(event));
                }
            }
        }
        hold_until
    }

    /// Waits for something to change: a message or a closed connection (the engine's waker), a
    /// scheduled change at `next_change`, or a subscription asked for.
    async fn wait_for_change(&self, next_change: Option<i64>) {
        let waiting_on = self.state().client;
        let wake = poll_fn(|cx| match waiting_on {
            Some(c) => {
                let mut engine = lock(&self.engine);
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
                Some(t) => sleep_until_clock(&self.engine, t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wake => {}
            () = timer => {}
            () = self.changed.notified() => {}
        }
    }
}

/// A `message` push as an event (subscription confirmations and others are not events).
fn message_event(frame: Frame) -> Option<SubscriberEvent> {
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
        ) if &kind[..] == b"message" => Some(SubscriberEvent::Message { channel, payload }),
        _ => None,
    }
}
