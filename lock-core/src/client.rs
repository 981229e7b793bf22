//! The tokio driver: [`LockClient`], its guards and owner handles.
//!
//! One driver task per client owns the [`LockMachine`]: it feeds it requests from guards and
//! handles (over a channel), call results, pub/sub events and timer expiries, with the time read
//! from `tokio::time::Instant` relative to the client's creation (so tokio's paused time drives it
//! in tests). Every backend call runs in its own task, bounded by the response timeout, so one slow
//! call never stalls the others; subscriptions run in order on one task, as the machine requires.
//!
//! A [`LockGuard`] is one count of a hold. It unlocks explicitly ([`LockGuard::unlock`], with a
//! typed result) or, when dropped, in the background; either way its renewal stops at once. It
//! tells how long the hold is certainly valid ([`LockGuard::valid_until`]) and resolves
//! [`LockGuard::lost`] when the lease is lost or may be lost, including when the driver stops.
//! Reentrancy goes through an explicit [`LockOwner`] (from [`LockGuard::owner`] or
//! [`LockClient::new_owner`]), which can move between tasks: nothing depends on thread or task
//! identity (Redisson's thread ids are its most reported source of bugs: #6662, #3580, #6878).

use crate::backend::Backend;
use crate::config::{ConfigError, LockConfig};
use crate::machine::{
    AcquireRequest, BackendError, Call, CallId, Done, HoldId, HoldMode, HoldState, IdSource, Input,
    LockError, LockEvent, LockMachine, OpId, Output, OwnerId, PubSubEvent, RemainingLease, Request,
    SeededIds, UnlockOutcome, Wait,
};
use crate::reply::Reply;
use crate::time::{Lease, Millis, MonoTime};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// A lock client: one driver task, one watchdog, one set of unlock subscriptions.
///
/// Cheap to clone (clones share the driver). The driver runs while the client, a clone, a guard
/// or an owner handle exists, and stops once all are gone and their unlocks are done; or at once
/// on [`LockClient::abort`].
#[derive(Clone)]
pub struct LockClient {
    shared: Arc<Shared>,
}

struct Shared {
    commands: mpsc::UnboundedSender<Command>,
    client_id: String,
    config: LockConfig,
    next_op: AtomicU64,
    driver: tokio::task::AbortHandle,
}

enum Command {
    Request {
        /// `None` for a background release (the driver numbers it).
        op: Option<OpId>,
        request: Request,
        reply: Option<oneshot::Sender<Answer>>,
    },
    Cancel {
        op: OpId,
    },
}

/// What the driver hands back for an operation: its result and, for a grant, the hold's status
/// and a ticket that releases the grant if nobody turns it into a guard.
struct Answer {
    result: Result<Done, LockError>,
    status: Option<watch::Receiver<HoldStatus>>,
    ticket: Option<HoldTicket>,
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

impl LockClient {
    /// A client over `backend`; refuses an unsafe `config`. Must be called inside a tokio runtime.
    /// Ids are drawn from a generator seeded once from the operating system.
    pub fn new<B: Backend>(backend: B, config: LockConfig) -> Result<LockClient, ConfigError> {
        LockClient::with_ids(backend, config, SeededIds::from_os())
    }

    /// A client whose client, owner and request ids come from `ids` (a seeded source makes a test
    /// replay exactly).
    pub fn with_ids<B: Backend>(
        backend: B,
        config: LockConfig,
        ids: impl IdSource,
    ) -> Result<LockClient, ConfigError> {
        let machine = LockMachine::new(config.clone(), ids)?;
        let client_id = machine.client_id().to_owned();
        let origin = Instant::now();
        let (commands, command_rx) = mpsc::unbounded_channel();
        let weak = commands.downgrade();
        let driver = Driver {
            backend: Arc::new(backend),
            machine,
            origin,
            response_timeout: config.response_timeout().to_duration(),
            weak_commands: weak,
            pending: HashMap::new(),
            statuses: HashMap::new(),
            background_ops: 0,
        };
        let handle = tokio::spawn(driver.run(command_rx));
        Ok(LockClient {
            shared: Arc::new(Shared {
                commands,
                client_id,
                config,
                next_op: AtomicU64::new(1),
                driver: handle.abort_handle(),
            }),
        })
    }

    /// This client's id (the first part of every owner it writes).
    pub fn client_id(&self) -> &str {
        &self.shared.client_id
    }

    /// The configuration.
    pub fn config(&self) -> &LockConfig {
        &self.shared.config
    }

    /// Stops the driver at once, as a crash would: no renewal, no release, no answer is sent
    /// any more, and every guard's [`LockGuard::lost`] resolves. Locks expire with their leases.
    pub fn abort(&self) {
        self.shared.driver.abort();
    }

    /// A new owner, for reentrant use across tasks.
    pub async fn new_owner(&self) -> Result<LockOwner, LockError> {
        match self.run(Request::NewOwner).await?.result? {
            Done::Owner(id) => Ok(LockOwner {
                client: self.clone(),
                id,
            }),
            other => Err(unexpected(other)),
        }
    }

    /// Takes the lock for a new owner, waiting as long as it takes; the watchdog keeps it.
    pub async fn lock(&self, name: &str) -> Result<LockGuard, LockError> {
        self.lock_as(name, None, None, false).await
    }

    /// Takes the lock for a new owner with a fixed lease (no watchdog: it expires after `lease`).
    pub async fn lock_with_lease(
        &self,
        name: &str,
        lease: Duration,
    ) -> Result<LockGuard, LockError> {
        self.lock_as(name, None, Some(lease_of(lease)?), false)
            .await
    }

    /// Tries to take the lock for a new owner within `wait`; `Ok(None)` when it stayed held.
    /// `lease: None` uses the watchdog.
    pub async fn try_lock(
        &self,
        name: &str,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<LockGuard>, LockError> {
        self.try_lock_as(name, None, wait, lease, false).await
    }

    /// As [`lock`](Self::lock), also drawing a fencing token (returned, and on the guard).
    pub async fn lock_fenced(&self, name: &str) -> Result<(LockGuard, u64), LockError> {
        self.lock_as(name, None, None, true).await.map(with_token)
    }

    /// As [`try_lock`](Self::try_lock), also drawing a fencing token.
    pub async fn try_lock_fenced(
        &self,
        name: &str,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<(LockGuard, u64)>, LockError> {
        Ok(self
            .try_lock_as(name, None, wait, lease, true)
            .await?
            .map(with_token))
    }

    /// Deletes the lock whoever holds it and wakes its waiters; whether a lock was deleted.
    /// This client's own holds of it stop renewing first and are reported lost.
    pub async fn force_unlock(&self, name: &str) -> Result<bool, LockError> {
        match self
            .run(Request::ForceUnlock { name: name.into() })
            .await?
            .result?
        {
            Done::ForceUnlocked(deleted) => Ok(deleted),
            other => Err(unexpected(other)),
        }
    }

    /// Whether anyone holds the lock.
    pub async fn is_locked(&self, name: &str) -> Result<bool, LockError> {
        match self
            .run(Request::IsLocked { name: name.into() })
            .await?
            .result?
        {
            Done::Locked(locked) => Ok(locked),
            other => Err(unexpected(other)),
        }
    }

    /// How many times `owner` holds the lock, as the server counts.
    pub async fn hold_count(&self, name: &str, owner: &LockOwner) -> Result<u64, LockError> {
        match self
            .run(Request::HoldCount {
                name: name.into(),
                owner: owner.id,
            })
            .await?
            .result?
        {
            Done::HoldCount(n) => Ok(n),
            other => Err(unexpected(other)),
        }
    }

    /// The lock's remaining lease on the server.
    pub async fn remaining_lease(&self, name: &str) -> Result<RemainingLease, LockError> {
        match self
            .run(Request::RemainingLease { name: name.into() })
            .await?
            .result?
        {
            Done::RemainingLease(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// Takes or re-enters the lock as `owner` (`None`: a new owner), waiting as long as it takes.
    async fn lock_as(
        &self,
        name: &str,
        owner: Option<OwnerId>,
        lease: Option<Lease>,
        fenced: bool,
    ) -> Result<LockGuard, LockError> {
        self.acquire_guard(name, owner, lease, Wait::Forever, fenced)
            .await
            .and_then(expect_guard)
    }

    /// Tries to take or re-enter the lock as `owner` (`None`: a new owner) within `wait`.
    async fn try_lock_as(
        &self,
        name: &str,
        owner: Option<OwnerId>,
        wait: Duration,
        lease: Option<Duration>,
        fenced: bool,
    ) -> Result<Option<LockGuard>, LockError> {
        let lease = lease.map(lease_of).transpose()?;
        self.acquire_guard(
            name,
            owner,
            lease,
            Wait::Budget(Millis::from_duration(wait)),
            fenced,
        )
        .await
    }

    async fn acquire_guard(
        &self,
        name: &str,
        owner: Option<OwnerId>,
        lease: Option<Lease>,
        wait: Wait,
        fenced: bool,
    ) -> Result<Option<LockGuard>, LockError> {
        let answer = self
            .run(Request::Acquire(AcquireRequest {
                name: name.into(),
                owner,
                lease,
                wait,
                fenced,
            }))
            .await?;
        match answer.result? {
            Done::Acquired(acquired) => {
                let (Some(status), Some(ticket)) = (answer.status, answer.ticket) else {
                    return Err(LockError::ClientStopped);
                };
                Ok(Some(LockGuard {
                    client: self.clone(),
                    ticket,
                    status,
                    token: acquired.token,
                    mode: acquired.mode,
                }))
            }
            Done::NotAcquired => Ok(None),
            other => Err(unexpected(other)),
        }
    }

    /// Sends one request and waits for its answer; dropping the future cancels it (an acquire
    /// in flight is undone if it succeeds).
    async fn run(&self, request: Request) -> Result<Answer, LockError> {
        let op = OpId(self.shared.next_op.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.shared
            .commands
            .send(Command::Request {
                op: Some(op),
                request,
                reply: Some(tx),
            })
            .map_err(|_| LockError::ClientStopped)?;
        let mut cancel = CancelOnDrop {
            commands: &self.shared.commands,
            op,
            armed: true,
        };
        let answer = rx.await.map_err(|_| LockError::ClientStopped);
        cancel.armed = false;
        answer
    }
}

struct CancelOnDrop<'a> {
    commands: &'a mpsc::UnboundedSender<Command>,
    op: OpId,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.commands.send(Command::Cancel { op: self.op });
        }
    }
}

fn lease_of(lease: Duration) -> Result<Lease, LockError> {
    Ok(Lease::new(Millis::from_duration(lease))?)
}

fn expect_guard(guard: Option<LockGuard>) -> Result<LockGuard, LockError> {
    // A wait without a budget ends only with a grant or an error.
    guard.ok_or(LockError::ClientStopped)
}

fn with_token(guard: LockGuard) -> (LockGuard, u64) {
    let token = guard.token.unwrap_or_default();
    (guard, token)
}

fn unexpected(done: Done) -> LockError {
    tracing::error!(
        ?done,
        "the lock machine answered an operation with another's result"
    );
    LockError::ClientStopped
}

/// An owner: the `owner_id` half of the hash field. Re-entering a lock goes through the same
/// owner; the handle can be cloned and moved between tasks.
#[derive(Clone)]
pub struct LockOwner {
    client: LockClient,
    id: OwnerId,
}

impl std::fmt::Debug for LockOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LockOwner({}:{})", self.client.client_id(), self.id)
    }
}

impl LockOwner {
    /// The owner id.
    pub fn id(&self) -> OwnerId {
        self.id
    }

    /// Takes or re-enters the lock with the watchdog.
    pub async fn lock(&self, name: &str) -> Result<LockGuard, LockError> {
        self.client.lock_as(name, Some(self.id), None, false).await
    }

    /// Takes or re-enters the lock with a fixed lease. Re-entering a fixed-lease hold sets the
    /// key's TTL to the new lease; re-entering a watchdog hold this way is refused.
    pub async fn lock_with_lease(
        &self,
        name: &str,
        lease: Duration,
    ) -> Result<LockGuard, LockError> {
        self.client
            .lock_as(name, Some(self.id), Some(lease_of(lease)?), false)
            .await
    }

    /// Tries to take or re-enter the lock within `wait`.
    pub async fn try_lock(
        &self,
        name: &str,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<LockGuard>, LockError> {
        self.client
            .try_lock_as(name, Some(self.id), wait, lease, false)
            .await
    }

    /// Takes or re-enters the lock with the watchdog, drawing a fencing token.
    pub async fn lock_fenced(&self, name: &str) -> Result<(LockGuard, u64), LockError> {
        self.client
            .lock_as(name, Some(self.id), None, true)
            .await
            .map(with_token)
    }

    /// How many times this owner holds the lock, as the server counts.
    pub async fn hold_count(&self, name: &str) -> Result<u64, LockError> {
        self.client.hold_count(name, self).await
    }
}

/// Gives back one count when dropped, unless disarmed: the background release of a guard, and
/// the undo of a grant whose caller went away before receiving it.
struct HoldTicket {
    commands: mpsc::WeakUnboundedSender<Command>,
    hold: HoldId,
    name: String,
    owner: OwnerId,
    armed: bool,
}

impl HoldTicket {
    fn release_request(&self) -> Request {
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
            && let Some(commands) = self.commands.upgrade()
        {
            let _ = commands.send(Command::Request {
                op: None,
                request: self.release_request(),
                reply: None,
            });
        }
    }
}

/// One count of a hold. Unlock it with [`unlock`](Self::unlock); dropping it stops its renewal at
/// once and releases it in the background.
pub struct LockGuard {
    // Declared first so it drops first: its background release must go out while `client` still
    // keeps the driver's channel open.
    ticket: HoldTicket,
    client: LockClient,
    status: watch::Receiver<HoldStatus>,
    token: Option<u64>,
    mode: HoldMode,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("name", &self.ticket.name)
            .field("owner", &self.ticket.owner)
            .field("hold", &self.ticket.hold)
            .field("status", &*self.status.borrow())
            .finish()
    }
}

impl LockGuard {
    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.ticket.name
    }

    /// The hold this guard is a count of.
    pub fn hold_id(&self) -> HoldId {
        self.ticket.hold
    }

    /// The owner, for re-entering this lock (or taking others) as the same holder.
    pub fn owner(&self) -> LockOwner {
        LockOwner {
            client: self.client.clone(),
            id: self.ticket.owner,
        }
    }

    /// The hold's mode (watchdog or fixed lease).
    pub fn mode(&self) -> HoldMode {
        self.mode
    }

    /// Until when the hold is certainly still this owner's (on tokio's clock).
    pub fn valid_until(&self) -> Instant {
        self.status.borrow().valid_until
    }

    /// Whether the hold is certainly still this owner's now.
    pub fn is_valid(&self) -> bool {
        let status = self.status();
        status.state == HoldState::Valid
            && Instant::now() < status.valid_until
            && !self.client.shared.driver.is_finished()
    }

    /// The owner's newest fencing token (write with this one), if it ever drew one.
    pub fn token(&self) -> Option<u64> {
        let newest = self.status.borrow().token;
        match (newest, self.token) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The hold's status now.
    pub fn status(&self) -> HoldStatus {
        let closed = self.status.has_changed().is_err();
        reported(*self.status.borrow(), closed)
    }

    /// A watch of the hold's status, for `select!` loops. The channel closes when the hold ends;
    /// closed while the state still reads `Valid` or `MayBeLost`, it means the client stopped
    /// ([`HoldState::ClientStopped`], as [`status`](Self::status) reports it).
    pub fn watch(&self) -> watch::Receiver<HoldStatus> {
        self.status.clone()
    }

    /// Resolves when the lease is lost or may be lost, or the client stops, with the state that
    /// made it resolve (never [`HoldState::Valid`]).
    pub async fn lost(&self) -> HoldState {
        let mut status = self.status.clone();
        loop {
            let closed = status.has_changed().is_err();
            let state = reported(*status.borrow_and_update(), closed).state;
            if state != HoldState::Valid {
                return state;
            }
            // A closed channel ends the wait too: the next round reads it as `ClientStopped`.
            let _ = status.changed().await;
        }
    }

    /// Re-enters the lock as the same owner with the same kind of lease (the watchdog, or
    /// `lease` for a fixed-lease hold: `None` keeps the watchdog).
    pub async fn reenter(&self, lease: Option<Duration>) -> Result<LockGuard, LockError> {
        let owner = self.owner();
        match lease {
            None => owner.lock(self.name()).await,
            Some(lease) => owner.lock_with_lease(self.name(), lease).await,
        }
    }

    /// How many times this guard's owner holds the lock, as the server counts.
    pub async fn hold_count(&self) -> Result<u64, LockError> {
        self.owner().hold_count(self.name()).await
    }

    /// Gives back this count. `Released` when the lock was deleted (waiters are woken),
    /// `StillHeld` when the owner still holds it (its lease re-applied). The hold's renewal stops
    /// before the release is sent, whatever the outcome; "not locked" names the lock, client and
    /// owner; "outcome unknown" means no attempt was answered within the latch window.
    pub async fn unlock(mut self) -> Result<UnlockOutcome, LockError> {
        self.ticket.armed = false;
        let request = self.ticket.release_request();
        match self.client.run(request).await?.result? {
            Done::Unlocked(outcome) => Ok(outcome),
            other => Err(unexpected(other)),
        }
    }
}

/// `status` as a guard reports it: a channel that closed before the hold ended means that the
/// driver, and with it the hold's renewal, stopped. Callers see whether it is `closed` before
/// they read `status`, so a closed channel's status is the last one the driver sent.
fn reported(mut status: HoldStatus, closed: bool) -> HoldStatus {
    if closed && !status.state.is_ended() {
        status.state = HoldState::ClientStopped;
    }
    status
}

// ---- the driver task ----

struct Driver<B> {
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
    fn now(&self) -> MonoTime {
        MonoTime(Millis::from_duration(Instant::now().saturating_duration_since(self.origin)).0)
    }

    fn instant(&self, t: MonoTime) -> Instant {
        self.origin + Duration::from_millis(t.as_millis())
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let (result_tx, mut results) =
            mpsc::unbounded_channel::<(CallId, Result<Reply, BackendError>)>();
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
                        let op = op.unwrap_or_else(|| {
                            self.background_ops += 1;
                            OpId(BACKGROUND_OPS + self.background_ops)
                        });
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
                Some((id, result)) = results.recv() => Some(Input::CallResult { id, result }),
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
        results: &mpsc::UnboundedSender<(CallId, Result<Reply, BackendError>)>,
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
                            Call::Script(script) => backend.eval(script).await,
                            Call::Command(argv) => backend.command(argv).await,
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
        match self.pending.remove(&op) {
            Some(reply) => {
                // If the caller went away meanwhile, the ticket inside the unsent answer is
                // dropped here and gives the grant back.
                let _ = reply.send(Answer {
                    result,
                    status,
                    ticket,
                });
            }
            None => drop(ticket),
        }
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
                    HoldState::Released => tracing::info!(%lock, %owner, "lock released"),
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
            .or_insert_with(|| new_status(valid_until))
    }

    fn move_valid_until(&mut self, hold: HoldId, valid_until: MonoTime) {
        let at = self.instant(valid_until);
        if let Some(s) = self.statuses.get(&hold) {
            s.send_modify(|s| s.valid_until = at);
        }
    }
}

fn new_status(valid_until: Instant) -> watch::Sender<HoldStatus> {
    watch::Sender::new(HoldStatus {
        state: HoldState::Valid,
        valid_until,
        token: None,
        max_hold_reached: false,
    })
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

// Production ids are seeded here, in the driver: the machine reads no clock and draws no
// randomness of its own.
impl SeededIds {
    /// A source seeded from the operating system's randomness (through the standard library's
    /// randomly keyed hasher) and the wall clock, for production clients.
    pub fn from_os() -> SeededIds {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        hasher.write_u128(wall);
        hasher.write_u32(std::process::id());
        SeededIds::new(hasher.finish())
    }
}
