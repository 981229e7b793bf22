//! The driver task: the one owner of a client's [`LockMachine`], and its hands.
//!
//! It feeds the machine every input with the time read from `tokio::time::Instant` (relative to
//! the client's creation, so tokio's paused time drives it in tests), carries out every output,
//! and sleeps until the next input or the machine's next deadline. Backend calls run in tasks of
//! their own, bounded by the response timeout; subscriptions run in order on one task, as the
//! machine requires. It decides no rule of the lock itself: a guard's status is what the machine
//! said.

use super::guard::HoldTicket;
use super::{Answer, Command, HoldStatus};
use crate::backend::Backend;
use crate::machine::{
    BackendError, Call, CallId, Done, HoldId, HoldState, Input, LockError, LockEvent, LockMachine,
    OpId, Output, PubSubEvent,
};
use crate::reply::Reply;
use crate::script::ReplicaAcks;
use crate::time::{Millis, MonoTime};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// A call's reply, with the replica count of its `WAIT` if it carried one.
type CallOutcome = Result<(Reply, Option<ReplicaAcks>), BackendError>;

/// The task's state: the machine, who waits for which operation, and each hold's status channel.
pub(super) struct Driver<B> {
    backend: Arc<B>,
    machine: LockMachine,
    origin: Instant,
    response_timeout: Duration,
    weak_commands: mpsc::WeakUnboundedSender<Command>,
    pending: HashMap<OpId, oneshot::Sender<Answer>>,
    statuses: HashMap<HoldId, watch::Sender<HoldStatus>>,
    background_ops: u64,
}

/// Operation ids the driver gives background releases: far above any a client hands out.
const BACKGROUND_OPS: u64 = 1 << 62;

enum SubCommand {
    Subscribe(Bytes),
    Unsubscribe(Bytes),
}

impl<B: Backend> Driver<B> {
    pub(super) fn new(
        backend: B,
        machine: LockMachine,
        commands: mpsc::WeakUnboundedSender<Command>,
    ) -> Driver<B> {
        let response_timeout = machine.config().response_timeout().to_duration();
        Driver {
            backend: Arc::new(backend),
            machine,
            origin: Instant::now(),
            response_timeout,
            weak_commands: commands,
            pending: HashMap::new(),
            statuses: HashMap::new(),
            background_ops: 0,
        }
    }

    fn now(&self) -> MonoTime {
        MonoTime(Millis::from_duration(Instant::now().saturating_duration_since(self.origin)).0)
    }

    fn instant(&self, t: MonoTime) -> Instant {
        self.origin + Duration::from_millis(t.as_millis())
    }

    pub(super) async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let (result_tx, mut results) = mpsc::unbounded_channel::<(CallId, CallOutcome)>();
        let (sub_tx, sub_rx) = mpsc::unbounded_channel::<SubCommand>();
        let (subscribed_tx, mut subscribed) =
            mpsc::unbounded_channel::<(Bytes, Result<(), BackendError>)>();
        let (event_tx, mut events) = mpsc::unbounded_channel::<PubSubEvent>();
        let mut tasks = JoinSet::new();
        tasks.spawn(subscriptions(
            self.backend.clone(),
            sub_rx,
            subscribed_tx,
            self.response_timeout,
        ));
        let backend = self.backend.clone();
        tasks.spawn(async move {
            loop {
                let event = backend.next_event().await;
                if event_tx.send(event).is_err() {
                    return;
                }
            }
        });
        let mut open = true;
        loop {
            while let Some(output) = self.machine.poll_output() {
                self.dispatch(output, &mut tasks, &result_tx, &sub_tx);
            }
            while tasks.try_join_next().is_some() {}
            if !open && self.machine.ops_in_progress() == 0 {
                return;
            }
            let deadline = self.machine.poll_timeout().map(|t| self.instant(t));
            let input = tokio::select! {
                command = commands.recv(), if open => match command {
                    Some(Command::Request { op, request, reply }) => {
                        let op = op.unwrap_or_else(|| self.background_op());
                        if let Some(reply) = reply {
                            self.pending.insert(op, reply);
                        }
                        Some(Input::Request { op, request })
                    }
                    Some(Command::Cancel { op }) => {
                        self.pending.remove(&op);
                        Some(Input::Cancel { op })
                    }
                    None => {
                        open = false;
                        None
                    }
                },
                Some((id, result)) = results.recv() => Some(match result {
                    Ok((reply, Some(replicas))) => Input::SyncedCallResult { id, reply, replicas },
                    other => Input::CallResult { id, result: other.map(|(reply, _)| reply) },
                }),
                Some((channel, result)) = subscribed.recv() => Some(Input::Subscribed { channel, result }),
                Some(event) = events.recv() => Some(Input::PubSub(event)),
                () = sleep_until(deadline) => Some(Input::Timeout),
            };
            if let Some(input) = input {
                let now = self.now();
                self.machine.handle(input, now);
            }
        }
    }

    fn dispatch(
        &mut self,
        output: Output,
        tasks: &mut JoinSet<()>,
        results: &mpsc::UnboundedSender<(CallId, CallOutcome)>,
        subscriptions: &mpsc::UnboundedSender<SubCommand>,
    ) {
        match output {
            Output::Call { id, call } => {
                let backend = self.backend.clone();
                let results = results.clone();
                let timeout = self.response_timeout;
                tasks.spawn(async move {
                    let work = async {
                        match &call {
                            Call::Script(script) if script.sync.is_some() => {
                                backend.eval_synced(script).await
                            }
                            Call::Script(script) => backend.eval(script).await.map(|r| (r, None)),
                            Call::Command(argv) => backend.command(argv).await.map(|r| (r, None)),
                        }
                    };
                    let result = tokio::time::timeout(timeout, work)
                        .await
                        .unwrap_or_else(|_| {
                            Err(BackendError::Unknown(format!(
                                "no reply within the response timeout of {} ms",
                                timeout.as_millis()
                            )))
                        });
                    let _ = results.send((id, result));
                });
            }
            Output::Subscribe { channel } => {
                let _ = subscriptions.send(SubCommand::Subscribe(channel));
            }
            Output::Unsubscribe { channel } => {
                let _ = subscriptions.send(SubCommand::Unsubscribe(channel));
            }
            Output::Done { op, result } => self.answer(op, result),
            Output::Event(event) => self.on_event(event),
        }
    }

    fn answer(&mut self, op: OpId, result: Result<Done, LockError>) {
        let mut status = None;
        let mut ticket = None;
        if let Ok(Done::Acquired(acquired)) = &result {
            let valid_until = self.instant(acquired.valid_until);
            let sender = self.status_of(acquired.hold, valid_until);
            sender.send_modify(|s| {
                s.token = acquired.token;
            });
            status = Some(sender.subscribe());
            ticket = Some(HoldTicket {
                commands: self.weak_commands.clone(),
                hold: acquired.hold,
                name: acquired.name.clone(),
                owner: acquired.owner,
                armed: true,
            });
        }
        let unclaimed = match self.pending.remove(&op) {
            Some(reply) => reply
                .send(Answer {
                    result,
                    status,
                    ticket,
                })
                .err()
                .and_then(|answer| answer.ticket),
            None => ticket,
        };
        // The caller went away meanwhile: give the grant back here. Its ticket's own way back,
        // the client's command channel, is gone once the last client handle is dropped, and the
        // lock would stay held for its whole lease.
        if let Some(mut ticket) = unclaimed {
            ticket.armed = false;
            let (op, now) = (self.background_op(), self.now());
            let request = ticket.release_request();
            self.machine.handle(Input::Request { op, request }, now);
        }
    }

    /// A fresh id for an operation no caller waits for (a release in the background).
    fn background_op(&mut self) -> OpId {
        self.background_ops += 1;
        OpId(BACKGROUND_OPS + self.background_ops)
    }

    /// Carries a hold's event to its guards' status; every state it shows is the machine's.
    fn on_event(&mut self, event: LockEvent) {
        match event {
            LockEvent::Acquired {
                hold,
                count,
                valid_until,
            } => {
                tracing::info!(lock = %hold.name, owner = %hold.owner, count, %valid_until, "lock acquired");
                let at = self.instant(valid_until);
                self.status_of(hold.id, at)
                    .send_modify(|s| s.valid_until = at);
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
                    HoldState::Released => tracing::info!(%lock, %owner, "lock release sent"),
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

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Applies subscriptions and unsubscriptions in order, reporting each subscription's result.
async fn subscriptions<B: Backend>(
    backend: Arc<B>,
    mut commands: mpsc::UnboundedReceiver<SubCommand>,
    results: mpsc::UnboundedSender<(Bytes, Result<(), BackendError>)>,
    timeout: Duration,
) {
    while let Some(command) = commands.recv().await {
        match command {
            SubCommand::Subscribe(channel) => {
                let result = tokio::time::timeout(timeout, backend.subscribe(&channel))
                    .await
                    .unwrap_or_else(|_| Err(BackendError::Unknown("subscribe timed out".into())));
                if results.send((channel, result)).is_err() {
                    return;
                }
            }
            SubCommand::Unsubscribe(channel) => {
                let _ = tokio::time::timeout(timeout, backend.unsubscribe(&channel)).await;
            }
        }
    }
}
