//! The driver task: what the machine needs that no caller brings it.
//!
//! Callers step the machine themselves and run the calls of their own operations (`state.rs`).
//! The driver does the rest, as one future polled by one task, with nothing spawned per call: it
//! sleeps until the machine's next deadline on one tokio timer (kept in the client's core, where
//! a caller's step sets it earlier without waking the driver); it polls the backend's pub/sub
//! events; it applies subscriptions in order, one at a time, as the machine requires; and it
//! polls every call no caller runs (renewal batches, the attempts of waiters woken by an unlock
//! message, background releases, the calls of callers that went away) side by side, so one slow
//! call never stalls another. Each turn feeds what came back to the machine at the present time
//! and takes the work the steps queued. It decides no rule of the lock itself: a guard's status is
//! what the machine said.

use super::state::{CallFuture, CallOutcome, ClientState, Subscription, call_result};
use crate::backend::Backend;
use crate::machine::{BackendError, CallId, Input, PubSubEvent};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Turns in one poll before the driver yields to its runtime's other tasks.
const TURNS_PER_POLL: usize = 16;

type SubscriptionFuture =
    Pin<Box<dyn Future<Output = Option<(Bytes, Result<(), BackendError>)>> + Send>>;
type EventFuture = Pin<Box<dyn Future<Output = PubSubEvent> + Send>>;

/// The driver task's future.
pub(super) struct Driver<B> {
    state: Arc<ClientState>,
    backend: Arc<B>,
    response_timeout: Duration,
    calls: FuturesUnordered<Running>,
    subscriptions: VecDeque<Subscription>,
    subscribing: Option<SubscriptionFuture>,
    event: EventFuture,
    inputs: Vec<Input>,
}

/// A call the driver polls, with its id.
struct Running {
    id: CallId,
    call: CallFuture,
}

impl Future for Running {
    type Output = (CallId, CallOutcome);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        self.call.as_mut().poll(cx).map(|outcome| (id, outcome))
    }
}

impl<B: Backend> Driver<B> {
    pub(super) fn new(
        state: Arc<ClientState>,
        backend: Arc<B>,
        response_timeout: Duration,
    ) -> Driver<B> {
        let event = next_event(&backend);
        Driver {
            state,
            backend,
            response_timeout,
            calls: FuturesUnordered::new(),
            subscriptions: VecDeque::new(),
            subscribing: None,
            event,
            inputs: Vec::new(),
        }
    }

    /// One turn: feeds the machine what came back, starts what the steps queued and sets the
    /// timer. `Some(true)` when it did anything (another turn may find more), `Some(false)` when
    /// there was nothing to do (every source it polled will wake it), `None` when the driver is
    /// done.
    fn turn(&mut self, cx: &mut Context<'_>) -> Option<bool> {
        while let Poll::Ready(Some((id, outcome))) = self.calls.poll_next_unpin(cx) {
            self.inputs.push(call_result(id, outcome));
        }
        if let Some(subscribing) = &mut self.subscribing
            && let Poll::Ready(done) = subscribing.as_mut().poll(cx)
        {
            self.subscribing = None;
            if let Some((channel, result)) = done {
                self.inputs.push(Input::Subscribed { channel, result });
            }
        }
        while let Poll::Ready(event) = self.event.as_mut().poll(cx) {
            self.inputs.push(Input::PubSub(event));
            self.event = next_event(&self.backend);
        }
        let (busy, calls, orphans) = {
            let mut core = self.state.lock();
            if core.poll_timer(cx) {
                self.inputs.push(Input::Timeout);
            }
            let busy = !self.inputs.is_empty();
            for input in self.inputs.drain(..) {
                core.step(input, self.state.now(), None);
            }
            if core.finished() {
                return None;
            }
            core.set_driver(cx.waker());
            self.subscriptions.extend(core.take_subscriptions());
            let (calls, orphans) = (core.take_queued_calls(), core.take_orphans());
            core.arm_timer(cx.waker());
            (busy, calls, orphans)
        };

        let mut busy = busy || !calls.is_empty() || !orphans.is_empty();
        for (id, call) in calls {
            let call = self.state.start_call(call);
            self.calls.push(Running { id, call });
        }
        for (id, call) in orphans {
            self.calls.push(Running { id, call });
        }
        if self.subscribing.is_none()
            && let Some(next) = self.subscriptions.pop_front()
        {
            self.subscribing = Some(self.subscription(next));
            busy = true;
        }
        Some(busy)
    }

    /// The future of one subscription change, bounded by the response timeout.
    fn subscription(&self, change: Subscription) -> SubscriptionFuture {
        let backend = Arc::clone(&self.backend);
        let timeout = self.response_timeout;
        match change {
            Subscription::Subscribe(channel) => Box::pin(async move {
                let result = tokio::time::timeout(timeout, backend.subscribe(&channel))
                    .await
                    .unwrap_or_else(|_| Err(BackendError::Unknown("subscribe timed out".into())));
                Some((channel, result))
            }),
            Subscription::Unsubscribe(channel) => Box::pin(async move {
                let _ = tokio::time::timeout(timeout, backend.unsubscribe(&channel)).await;
                None
            }),
        }
    }
}

/// The backend's next pub/sub event (`next_event` is cancel-safe, so the future may be dropped).
fn next_event<B: Backend>(backend: &Arc<B>) -> EventFuture {
    let backend = Arc::clone(backend);
    Box::pin(async move { backend.next_event().await })
}

impl<B: Backend> Future for Driver<B> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        for _ in 0..TURNS_PER_POLL {
            match this.turn(cx) {
                None => return Poll::Ready(()),
                Some(false) => return Poll::Pending,
                Some(true) => {}
            }
        }
        // Still busy: let the runtime's other tasks run, and come back.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<B> Drop for Driver<B> {
    /// However the driver ends (every handle gone, aborted, its runtime shut down), the client
    /// stops with it: nothing would renew, retry or answer any more.
    fn drop(&mut self) {
        self.state.stop();
    }
}
