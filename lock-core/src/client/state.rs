//! The client's shared state: its one [`LockMachine`], who waits for which operation, each hold's
//! status channel, and the work queued for the driver task.
//!
//! Whoever has an input for the machine steps it here, under one mutex that is never held across
//! an `.await`: a caller's future (its request, and the result of the call it runs itself), the
//! driver task (timers, pub/sub events, subscriptions, and the calls no caller runs) and a dropped
//! guard (its background release). A step feeds one input at the present time and carries out
//! every output at once: an answer goes into its operation's slot and wakes its caller, an event
//! goes to its hold's status channel, and a call goes to the caller whose operation it serves
//! when that caller is the one stepping, or else to the driver.
//!
//! So an acquire or unlock that the machine can answer after one call is one round trip polled by
//! its caller's own task: no hop to another task and back, no task spawned, and one timer (the
//! backend's, when it bounds its calls within the response timeout; the client's otherwise). The
//! driver is woken only when it has work: a queued call or subscription, or, before its timer
//! exists, a machine deadline. After that a step that makes an earlier deadline sets the driver's
//! timer itself, for the driver's waker, so taking a lock (whose hold's end is such a deadline)
//! wakes no second task: on a multi-thread runtime, no second worker.
//!
//! Cancel safety is the machine's, as before: a caller's future dropped while its call is in
//! flight hands that call's future to the driver, which polls it to its end (nothing that went out
//! is forgotten, so an outcome is never lost), and cancels the operation in the machine, which
//! keeps resolving an acquire that may have been applied and gives back its grant. A grant
//! answered to a caller that went away is given back here.

use crate::backend::Backend;
use crate::machine::{
    BackendError, Call, CallId, Done, HoldId, HoldState, Input, LockError, LockEvent, LockMachine,
    LockName, OpId, Output, OwnerId, Request,
};
use crate::reply::Reply;
use crate::script::ReplicaAcks;
use crate::time::{Millis, MonoTime};
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

/// A call's reply, with the replica count of its `WAIT` if it carried one.
pub(super) type CallOutcome = Result<(Reply, Option<ReplicaAcks>), BackendError>;

/// A backend call on its way. It owns everything it needs, so whoever holds it can poll it: the
/// caller whose operation it serves, or the driver.
pub(super) type CallFuture = Pin<Box<dyn Future<Output = CallOutcome> + Send>>;

/// Starts the machine's calls on the client's backend, each with the one timeout that bounds it.
/// Object-safe, so that the client's handles, which do not name the backend's type, can start
/// the calls they run themselves.
pub(super) trait StartCall: Send + Sync + 'static {
    fn start(&self, call: Call) -> CallFuture;
}

/// [`StartCall`] on a [`Backend`].
pub(super) struct BackendCalls<B> {
    backend: Arc<B>,
    response_timeout: Duration,
    /// Whether the backend bounds every call within `response_timeout` itself
    /// ([`Backend::call_timeout`]): then the client adds no timer of its own.
    bounded_by_backend: bool,
}

impl<B: Backend> BackendCalls<B> {
    pub(super) fn new(backend: Arc<B>, response_timeout: Duration) -> BackendCalls<B> {
        let bounded_by_backend = backend
            .call_timeout()
            .is_some_and(|bound| bound <= response_timeout);
        BackendCalls {
            backend,
            response_timeout,
            bounded_by_backend,
        }
    }
}

impl<B: Backend> StartCall for BackendCalls<B> {
    fn start(&self, call: Call) -> CallFuture {
        let backend = Arc::clone(&self.backend);
        let bound = (!self.bounded_by_backend).then_some(self.response_timeout);
        Box::pin(async move {
            let work = async {
                match &call {
                    Call::Script(script) if script.sync.is_some() => {
                        backend.eval_synced(script).await
                    }
                    Call::Script(script) => backend.eval(script).await.map(|r| (r, None)),
                    Call::Command(argv) => backend.command(argv).await.map(|r| (r, None)),
                }
            };
            match bound {
                None => work.await,
                Some(timeout) => tokio::time::timeout(timeout, work)
                    .await
                    .unwrap_or_else(|_| Err(no_reply_within(timeout))),
            }
        })
    }
}

/// The error of a call that ran out of its response timeout: its outcome is unknown.
fn no_reply_within(timeout: Duration) -> BackendError {
    BackendError::Unknown(format!(
        "no reply within the response timeout of {} ms",
        timeout.as_millis()
    ))
}

/// The machine's input for a call's outcome.
pub(super) fn call_result(id: CallId, outcome: CallOutcome) -> Input {
    match outcome {
        Ok((reply, Some(replicas))) => Input::SyncedCallResult {
            id,
            reply,
            replicas,
        },
        other => Input::CallResult {
            id,
            result: other.map(|(reply, _)| reply),
        },
    }
}

/// A hold's status: its state, `valid_until` and the owner's newest fencing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldStatus {
    /// The state.
    pub state: HoldState,
    /// Until when the hold is certainly the owner's.
    pub valid_until: Instant,
    /// The owner's newest fencing token, if it drew one.
    pub token: Option<u64>,
    /// Whether the watchdog stopped renewing it because it reached `max_hold`.
    pub max_hold_reached: bool,
}

impl HoldStatus {
    /// The status of a hold just granted, valid until `valid_until`.
    pub(super) fn granted(valid_until: Instant) -> HoldStatus {
        HoldStatus {
            state: HoldState::Valid,
            valid_until,
            token: None,
            max_hold_reached: false,
        }
    }

    /// This status as a guard reports it: a channel that closed before the hold ended means that
    /// the driver, and with it the hold's renewal, stopped. Callers see whether the channel is
    /// `closed` before they read the status, so a closed channel's status is the driver's last.
    pub(super) fn reported(mut self, closed: bool) -> HoldStatus {
        if closed && !self.state.is_ended() {
            self.state = HoldState::ClientStopped;
        }
        self
    }
}

/// Gives back one count when dropped, unless disarmed: the background release of a guard, and
/// the undo of a grant whose caller went away before receiving it.
pub(super) struct HoldTicket {
    /// Weak, so that a ticket kept in the client's own state does not keep that state alive.
    pub(super) state: Weak<ClientState>,
    pub(super) hold: HoldId,
    pub(super) name: LockName,
    pub(super) owner: OwnerId,
    pub(super) armed: bool,
}

impl HoldTicket {
    pub(super) fn release_request(&self) -> Request {
        Request::Release {
            hold: self.hold,
            name: self.name.clone(),
            owner: self.owner,
        }
    }
}

impl Drop for HoldTicket {
    fn drop(&mut self) {
        if self.armed
            && let Some(state) = self.state.upgrade()
        {
            state.release_in_background(self.release_request());
        }
    }
}

/// What the driver hands back for an operation: its result and, for a grant, the hold's status
/// and a ticket that releases the grant if nobody turns it into a guard.
pub(super) struct Answer {
    pub(super) result: Result<Done, LockError>,
    pub(super) status: Option<watch::Receiver<HoldStatus>>,
    pub(super) ticket: Option<HoldTicket>,
}

/// A subscription change for the driver to apply, in the order the machine asked for them.
pub(super) enum Subscription {
    Subscribe(Bytes),
    Unsubscribe(Bytes),
}

/// An operation a caller waits for.
enum Slot {
    /// Not answered yet; the waker of the caller's task once it has polled.
    Waiting(Option<Waker>),
    /// Answered; the caller takes it at its next poll.
    Answered(Answer),
}

/// Everything the client's handles and its driver task share.
pub(super) struct ClientState {
    core: Mutex<Core>,
    calls: Box<dyn StartCall>,
    /// The machine's time zero: its `MonoTime` is tokio's clock since then (so tokio's paused
    /// time drives it in tests).
    origin: Instant,
    /// Set once the client stopped (its driver ended or was aborted): from then on no step is
    /// taken. Readable without the lock, for the guards' status.
    stopped: AtomicBool,
}

impl ClientState {
    pub(super) fn new(machine: LockMachine, calls: Box<dyn StartCall>) -> Arc<ClientState> {
        let origin = Instant::now();
        Arc::new_cyclic(|state| ClientState {
            core: Mutex::new(Core::new(machine, state.clone(), origin)),
            calls,
            origin,
            stopped: AtomicBool::new(false),
        })
    }

    /// The present, on the machine's clock.
    pub(super) fn now(&self) -> MonoTime {
        MonoTime(Millis::from_duration(Instant::now().saturating_duration_since(self.origin)).0)
    }

    /// The core, for one step. A panic under the lock leaves no half-applied step that matters
    /// more than stopping would, so a poisoned lock is taken as it is.
    pub(super) fn lock(&self) -> MutexGuard<'_, Core> {
        self.core
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The future of one of the machine's calls.
    pub(super) fn start_call(&self, call: Call) -> CallFuture {
        self.calls.start(call)
    }

    /// Whether the client stopped.
    pub(super) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Stops the client for good, as a crash would: no step any more, every waiting caller is
    /// answered that the client stopped, and every guard's status channel closes.
    pub(super) fn stop(&self) {
        let statuses = {
            let mut core = self.lock();
            self.stopped.store(true, Ordering::Release);
            core.stopped = true;
            // Dropped with the driver, before its runtime's timers shut down: nobody sets it again.
            core.timer = None;
            core.timer_at = None;
            for slot in core.slots.values_mut() {
                if let Slot::Waiting(waker) = slot
                    && let Some(waker) = waker.take()
                {
                    waker.wake();
                }
            }
            std::mem::take(&mut core.statuses)
        };
        // Dropping the senders closes the guards' channels: their `lost` resolves.
        drop(statuses);
    }

    /// Tells `observer` of every hold event from now on (replacing any observer before it).
    pub(super) fn observe(&self, observer: Observer) {
        self.lock().observer = Some(observer);
    }

    /// Every client handle is gone: the driver ends once the operations in progress are done.
    pub(super) fn close(&self) {
        let mut core = self.lock();
        core.closed = true;
        core.wake_driver();
    }

    /// Sends a release that no caller waits for (a guard dropped without `unlock`).
    pub(super) fn release_in_background(&self, request: Request) {
        let now = self.now();
        let mut core = self.lock();
        if core.stopped {
            return;
        }
        core.release_in_background(request, now);
        core.nudge_driver();
    }
}

/// The machine and what surrounds it; reached only through [`ClientState::lock`].
pub(super) struct Core {
    machine: LockMachine,
    /// For the tickets of grants, which give them back when dropped.
    state: Weak<ClientState>,
    origin: Instant,
    /// The time of the step being taken.
    now: MonoTime,
    /// Keyed by small sequential ids, of which only the operations and holds in flight are here:
    /// an ordered map finds them without hashing each id.
    slots: BTreeMap<OpId, Slot>,
    statuses: BTreeMap<HoldId, watch::Sender<HoldStatus>>,
    /// Calls for the driver to start.
    queued_calls: Vec<(CallId, Call)>,
    /// Calls whose caller went away mid-call: the driver polls them to their end.
    orphans: Vec<(CallId, CallFuture)>,
    subscriptions: VecDeque<Subscription>,
    /// The driver task's waker, once it has polled.
    driver: Option<Waker>,
    /// The timer that wakes the driver at the machine's next deadline. The driver makes it at the
    /// first deadline (a runtime without timers never needs one); from then on whoever steps the
    /// machine sets it, registering the driver's waker, so a new deadline wakes nobody now.
    timer: Option<Pin<Box<Sleep>>>,
    /// The deadline the timer is set for, until it fires; `None` when the driver sleeps without
    /// one.
    timer_at: Option<MonoTime>,
    /// Whether the driver was woken for a deadline: it makes the timer then, even if that
    /// deadline is gone by its turn (a lock released at once), so that the next one need not
    /// wake it.
    timer_wanted: bool,
    closed: bool,
    stopped: bool,
    background_ops: u64,
    /// Who is told of every hold event ([`super::LockClient::observe`]).
    observer: Option<Observer>,
}

/// A callback told of every hold event, under the client's lock.
pub(super) type Observer = Box<dyn FnMut(HoldEvent) + Send>;

/// One event of a hold, as [`super::LockClient::observe`] reports it: what the machine said, when,
/// and the hold's `valid_until` after it, on tokio's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldEvent {
    /// When the machine reported it.
    pub at: Instant,
    /// What it reported.
    pub event: LockEvent,
    /// The `valid_until` the event carries, on tokio's clock (`None` for
    /// [`LockEvent::MaxHoldReached`], which carries none).
    pub valid_until: Option<Instant>,
}

/// Operation ids the client gives background releases: far above any a caller is handed.
const BACKGROUND_OPS: u64 = 1 << 62;

impl Core {
    fn new(machine: LockMachine, state: Weak<ClientState>, origin: Instant) -> Core {
        Core {
            machine,
            state,
            origin,
            now: MonoTime::ZERO,
            slots: BTreeMap::new(),
            statuses: BTreeMap::new(),
            queued_calls: Vec::new(),
            orphans: Vec::new(),
            subscriptions: VecDeque::new(),
            driver: None,
            timer: None,
            timer_at: None,
            timer_wanted: false,
            closed: false,
            stopped: false,
            background_ops: 0,
            observer: None,
        }
    }

    fn instant(&self, t: MonoTime) -> Instant {
        self.origin + Duration::from_millis(t.as_millis())
    }

    pub(super) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Feeds `input` at `now` and carries out every output. A call of operation `caller` is
    /// returned for that caller to run itself (one at most; every other call goes to the driver).
    pub(super) fn step(
        &mut self,
        input: Input,
        now: MonoTime,
        caller: Option<OpId>,
    ) -> Option<(CallId, Call)> {
        self.now = self.now.max(now);
        self.machine.handle(input, now);
        let mut own = None;
        while let Some(output) = self.machine.poll_output() {
            match output {
                Output::Call { id, call } => {
                    if own.is_none() && caller.is_some() && self.machine.call_op(id) == caller {
                        own = Some((id, call));
                    } else {
                        self.queued_calls.push((id, call));
                    }
                }
                Output::Subscribe { channel } => {
                    self.subscriptions
                        .push_back(Subscription::Subscribe(channel));
                }
                Output::Unsubscribe { channel } => {
                    self.subscriptions
                        .push_back(Subscription::Unsubscribe(channel));
                }
                Output::Done { op, result } => self.answer(op, result, caller),
                Output::Event(event) => self.on_event(event),
            }
        }
        own
    }

    /// Wakes the driver if a step left it work: queued calls or subscriptions, or the end of the
    /// client. Called after a step by anyone but the driver, which looks at all of it on every
    /// turn.
    ///
    /// A machine deadline earlier than the timer's is not work for the driver once its timer
    /// exists: the step sets the timer here, for the driver's waker, and the timer wakes the
    /// driver when it is due. Waking the driver to set it would be a second task run for every
    /// lock taken (the hold's validity is such a deadline, and the release cancels it before the
    /// driver gets to it), and on a multi-thread runtime a second worker woken to run it.
    pub(super) fn nudge_driver(&mut self) {
        let next = self.machine.poll_timeout();
        let earlier = match (next, self.timer_at) {
            (Some(next), Some(set)) => next < set,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let mut wake = self.closed
            || !self.queued_calls.is_empty()
            || !self.orphans.is_empty()
            || !self.subscriptions.is_empty();
        if let Some(at) = next.filter(|_| earlier) {
            match self.driver.clone() {
                Some(driver) if self.timer.is_some() => self.set_timer(at, &driver),
                _ => {
                    self.timer_wanted = true;
                    wake = true;
                }
            }
        }
        if wake {
            self.wake_driver();
        }
    }

    fn wake_driver(&self) {
        if let Some(driver) = &self.driver {
            driver.wake_by_ref();
        }
    }

    // ---- the caller's side ----

    /// Opens the slot of a caller's operation, before its request goes in.
    pub(super) fn expect(&mut self, op: OpId) {
        self.slots.insert(op, Slot::Waiting(None));
    }

    /// The answer to `op` if it came (or the client stopped); otherwise `waker` is woken when it
    /// comes.
    pub(super) fn poll_answer(
        &mut self,
        op: OpId,
        waker: &Waker,
    ) -> Poll<Result<Answer, LockError>> {
        match self.slots.get_mut(&op) {
            Some(Slot::Waiting(slot)) if !self.stopped => {
                if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
                    *slot = Some(waker.clone());
                }
                Poll::Pending
            }
            Some(Slot::Answered(_)) => match self.slots.remove(&op) {
                Some(Slot::Answered(answer)) => Poll::Ready(Ok(answer)),
                _ => Poll::Ready(Err(LockError::ClientStopped)),
            },
            Some(Slot::Waiting(_)) | None => {
                self.slots.remove(&op);
                Poll::Ready(Err(LockError::ClientStopped))
            }
        }
    }

    /// The caller of `op` stopped waiting before it took an answer, perhaps with the operation's
    /// call in its hands: the call goes to the driver, to be polled to its end, and the machine
    /// hears of the cancel. An answer that came meanwhile is dropped, its grant given back.
    pub(super) fn abandon(&mut self, op: OpId, call: Option<(CallId, CallFuture)>, now: MonoTime) {
        let slot = self.slots.remove(&op);
        if self.stopped {
            return;
        }
        if let Some(call) = call {
            self.orphans.push(call);
        }
        match slot {
            Some(Slot::Answered(mut answer)) => {
                if let Some(ticket) = answer.ticket.as_mut() {
                    ticket.armed = false;
                    self.release_in_background(ticket.release_request(), now);
                }
            }
            Some(Slot::Waiting(_)) | None => {
                self.step(Input::Cancel { op }, now, None);
            }
        }
        self.nudge_driver();
    }

    /// Hands a call its caller would have run to the driver instead.
    pub(super) fn hand_over(&mut self, call: (CallId, CallFuture)) {
        self.orphans.push(call);
        self.nudge_driver();
    }

    // ---- the driver's side ----

    /// Whether the driver is done: the client stopped, or every handle is gone and no operation
    /// is left in progress.
    pub(super) fn finished(&self) -> bool {
        self.stopped || (self.closed && self.machine.ops_in_progress() == 0)
    }

    /// Notes the driver's waker, to be woken when a step leaves it work.
    pub(super) fn set_driver(&mut self, waker: &Waker) {
        if !self.driver.as_ref().is_some_and(|w| w.will_wake(waker)) {
            self.driver = Some(waker.clone());
        }
    }

    /// The calls queued for the driver to start.
    pub(super) fn take_queued_calls(&mut self) -> Vec<(CallId, Call)> {
        std::mem::take(&mut self.queued_calls)
    }

    /// The calls whose callers went away, for the driver to poll to their end.
    pub(super) fn take_orphans(&mut self) -> Vec<(CallId, CallFuture)> {
        std::mem::take(&mut self.orphans)
    }

    /// The subscription changes queued since the last time, in order.
    pub(super) fn take_subscriptions(&mut self) -> impl Iterator<Item = Subscription> + '_ {
        self.subscriptions.drain(..)
    }

    /// Whether the driver's timer fired since it was set (the driver's turn, with its context).
    pub(super) fn poll_timer(&mut self, cx: &mut Context<'_>) -> bool {
        let fired = self.timer_at.is_some()
            && self
                .timer
                .as_mut()
                .is_some_and(|timer| timer.as_mut().poll(cx).is_ready());
        if fired {
            self.timer_at = None;
        }
        fired
    }

    /// Sets the driver's timer for the machine's next deadline (the driver's turn, with its
    /// waker); makes the timer at the first deadline.
    pub(super) fn arm_timer(&mut self, driver: &Waker) {
        if self.timer.is_none() && std::mem::take(&mut self.timer_wanted) {
            // Not polled, so not in the runtime's timer wheel until set.
            self.timer = Some(Box::pin(tokio::time::sleep_until(Instant::now())));
        }
        let next = self.machine.poll_timeout();
        if next == self.timer_at {
            return;
        }
        match next {
            Some(at) => self.set_timer(at, driver),
            // The timer may still fire for the old deadline: the driver wakes, finds nothing due.
            None => self.timer_at = None,
        }
    }

    /// Sets the timer for `at` and registers `driver` with it, so that it wakes the driver when
    /// due, whoever set it; a deadline already past wakes the driver now.
    fn set_timer(&mut self, at: MonoTime, driver: &Waker) {
        let instant = self.instant(at);
        let timer = match &mut self.timer {
            Some(timer) => {
                timer.as_mut().reset(instant);
                timer
            }
            None => self
                .timer
                .insert(Box::pin(tokio::time::sleep_until(instant))),
        };
        self.timer_at = Some(at);
        if timer
            .as_mut()
            .poll(&mut Context::from_waker(driver))
            .is_ready()
        {
            driver.wake_by_ref();
        }
    }

    // ---- answers and hold events ----

    /// A fresh id for an operation no caller waits for (a release in the background).
    fn background_op(&mut self) -> OpId {
        self.background_ops += 1;
        OpId(BACKGROUND_OPS + self.background_ops)
    }

    fn release_in_background(&mut self, request: Request, now: MonoTime) {
        let op = self.background_op();
        self.step(Input::Request { op, request }, now, None);
    }

    /// Puts an operation's result in its slot and wakes its caller, unless the caller is the one
    /// stepping (it reads the slot when the step is done).
    fn answer(&mut self, op: OpId, result: Result<Done, LockError>, stepping: Option<OpId>) {
        let mut status = None;
        let mut ticket = None;
        if let Ok(Done::Acquired(acquired)) = &result {
            let valid_until = self.instant(acquired.valid_until);
            let sender = self.status_of(acquired.hold, valid_until);
            let token = acquired.token;
            // Receivers are woken only for a change: most grants carry no token.
            sender.send_if_modified(|s| std::mem::replace(&mut s.token, token) != token);
            status = Some(sender.subscribe());
            ticket = Some(HoldTicket {
                state: self.state.clone(),
                hold: acquired.hold,
                name: acquired.name.clone(),
                owner: acquired.owner,
                armed: true,
            });
        }
        match self.slots.get_mut(&op) {
            Some(slot @ Slot::Waiting(_)) => {
                let answer = Answer {
                    result,
                    status,
                    ticket,
                };
                if let Slot::Waiting(Some(waker)) = std::mem::replace(slot, Slot::Answered(answer))
                    && stepping != Some(op)
                {
                    waker.wake();
                }
            }
            _ => {
                // The caller went away meanwhile: give the grant back here, without waiting for
                // the ticket's drop, which would need this very lock.
                if let Some(mut ticket) = ticket {
                    ticket.armed = false;
                    let op = self.background_op();
                    let request = ticket.release_request();
                    self.machine
                        .handle(Input::Request { op, request }, self.now);
                }
            }
        }
    }

    /// Carries a hold's event to its guards' status; every state it shows is the machine's.
    fn on_event(&mut self, event: LockEvent) {
        if let Some(observer) = self.observer.as_mut() {
            let valid_until = match &event {
                LockEvent::Acquired { valid_until, .. }
                | LockEvent::Renewed { valid_until, .. }
                | LockEvent::ValidUntilChanged { valid_until, .. }
                | LockEvent::StateChanged { valid_until, .. } => Some(*valid_until),
                LockEvent::MaxHoldReached { .. } => None,
            };
            let at = self.origin + Duration::from_millis(self.now.as_millis());
            observer(HoldEvent {
                at,
                valid_until: valid_until
                    .map(|t| self.origin + Duration::from_millis(t.as_millis())),
                event: event.clone(),
            });
        }
        match event {
            LockEvent::Acquired {
                hold,
                count,
                valid_until,
            } => {
                tracing::debug!(lock = %hold.name, owner = %hold.owner, count, %valid_until, "lock acquired");
                let at = self.instant(valid_until);
                // A channel made for this event already reads `at`: nobody to wake then.
                self.status_of(hold.id, at)
                    .send_if_modified(|s| std::mem::replace(&mut s.valid_until, at) != at);
            }
            LockEvent::Renewed { hold, valid_until } => {
                tracing::debug!(lock = %hold.name, owner = %hold.owner, %valid_until, "lock renewed");
                self.move_valid_until(hold.id, valid_until);
            }
            LockEvent::ValidUntilChanged { hold, valid_until } => {
                self.move_valid_until(hold.id, valid_until);
            }
            LockEvent::StateChanged {
                hold,
                state,
                valid_until,
            } => {
                let (lock, owner) = (&hold.name, &hold.owner);
                match state {
                    HoldState::Valid => {
                        tracing::info!(%lock, %owner, %valid_until, "lock lease confirmed again: valid_until is ahead once more")
                    }
                    HoldState::MayBeLost => {
                        tracing::warn!(%lock, %owner, %valid_until, "lock lease may be lost: valid_until passed without a confirmed renewal")
                    }
                    HoldState::Lost => {
                        tracing::warn!(%lock, %owner, "lock lost: the server no longer has this owner's hold")
                    }
                    HoldState::Released => tracing::debug!(%lock, %owner, "lock release sent"),
                    HoldState::ClientStopped => {}
                }
                if state.is_ended() {
                    // The last word on this hold: dropping the sender closes its guards' watch.
                    if let Some(s) = self.statuses.remove(&hold.id) {
                        s.send_modify(|s| s.state = state);
                    }
                } else {
                    let at = self.instant(valid_until);
                    self.status_of(hold.id, at).send_modify(|s| s.state = state);
                }
            }
            LockEvent::MaxHoldReached { hold, held_for } => {
                tracing::warn!(lock = %hold.name, owner = %hold.owner, %held_for, "lock held past max_hold: the watchdog stopped renewing it");
                if let Some(s) = self.statuses.get(&hold.id) {
                    s.send_modify(|s| s.max_hold_reached = true);
                }
            }
        }
    }

    /// The status channel of `hold`, made (valid until `valid_until`) at its first event: a grant
    /// may report that its hold may be lost before it reports the grant.
    fn status_of(&mut self, hold: HoldId, valid_until: Instant) -> &watch::Sender<HoldStatus> {
        self.statuses
            .entry(hold)
            .or_insert_with(|| watch::Sender::new(HoldStatus::granted(valid_until)))
    }

    fn move_valid_until(&mut self, hold: HoldId, valid_until: MonoTime) {
        let at = self.instant(valid_until);
        if let Some(s) = self.statuses.get(&hold) {
            s.send_modify(|s| s.valid_until = at);
        }
    }
}
