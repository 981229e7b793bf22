//! The one way to acquire: [`Acquire`], a builder that is awaited directly.
//!
//! It maps one to one onto the machine's [`AcquireRequest`]: the lock's name, a fixed lease or the
//! watchdog, a wait budget, whether to draw a fencing token, and who acquires (a new owner, or an
//! existing one re-entering its hold); [`Acquire::fair`] makes it the machine's fair acquire. The wait is part of its type, because it decides what
//! awaiting gives: an acquire that waits as long as it takes ([`UntilAcquired`]) gives a guard; one
//! with a budget ([`WithinBudget`]) gives `Option<LockGuard>`, `None` when the budget ran out
//! while someone else held the lock, which is not an error. The request goes to the driver when
//! the future is first polled; dropping the future cancels it, and a grant that arrives after
//! that is given straight back.

use super::{Answer, Exchange, LockClient, LockGuard, LockOwner};
use crate::machine::{AcquireRequest, Done, LockError, LockName, OwnerId, Request, RwSide, Wait};
use crate::time::{Lease, Millis};
use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// The wait of an [`Acquire`] that ends only with the lock (or an error): awaiting it gives a
/// [`LockGuard`].
#[derive(Debug)]
pub enum UntilAcquired {}

/// The wait of an [`Acquire`] bounded by a budget: awaiting it gives `Option<LockGuard>`.
#[derive(Debug)]
pub enum WithinBudget {}

/// An acquire of one lock, to shape and then `.await`. Made by [`LockClient::acquire`] (a new
/// owner) or [`LockOwner::acquire`] (that owner, re-entering its hold).
///
/// ```
/// # use lock_core::{LockClient, LockError};
/// # use std::time::Duration;
/// # async fn run(client: LockClient) -> Result<(), LockError> {
/// // Wait up to 2 s; a 10 s lease that nothing renews; a fencing token for the writes.
/// let acquire = client.acquire("orders").wait(Duration::from_secs(2));
/// if let Some(guard) = acquire.lease(Duration::from_secs(10)).fenced().await? {
///     let token = guard.token().expect("a fenced acquire draws a token");
///     // ... write with `token` ...
///     guard.unlock().await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "an acquire does nothing until it is awaited"]
pub struct Acquire<'a, W = UntilAcquired> {
    client: &'a LockClient,
    name: LockName,
    owner: Option<OwnerId>,
    lease: Option<Duration>,
    wait: Wait,
    fenced: bool,
    fair: bool,
    /// A read-write lock's side ([`ReadWriteLock`](super::ReadWriteLock)).
    rw: Option<RwSide>,
    shape: PhantomData<fn() -> W>,
}

impl<'a> Acquire<'a> {
    pub(super) fn new(client: &'a LockClient, name: &str) -> Acquire<'a> {
        Acquire {
            client,
            name: name.into(),
            owner: None,
            lease: None,
            wait: Wait::Forever,
            fenced: false,
            fair: false,
            rw: None,
            shape: PhantomData,
        }
    }
}

impl<'a, W> Acquire<'a, W> {
    /// A fixed lease: the lock expires `lease` after it is taken, and nothing renews it. Without
    /// one the watchdog keeps the lock while its guard lives (`watchdog_timeout`, renewed every
    /// third of it). A reentry keeps the kind of its hold: re-entering a watchdog hold with a
    /// lease, or the reverse, is refused. A zero lease is refused when awaited.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Also draws a fencing token, on the guard as [`LockGuard::token`]: it grows with every
    /// fenced grant of the lock, so a resource that remembers the highest token it has seen can
    /// refuse a write from a holder whose lease ran out.
    pub fn fenced(mut self) -> Self {
        self.fenced = true;
        self
    }

    /// Takes the lock as Redisson's fair lock (`RFairLock`, the same keys): waiters are served in
    /// the order they arrived, each woken on its own channel when its turn comes. A waiter's place
    /// is kept for its wait budget beyond the wait of the one before it (`fair_lock_wait_timeout`,
    /// 5 minutes, when it waits forever), and a waiter that gives up leaves the queue. Its guard unlocks and renews as any other; unlock
    /// wakes the next in line. A fair lock draws no fencing token: with [`fenced`](Self::fenced)
    /// too, awaiting fails with [`LockError::FencedFairLock`] and sends nothing. Use it on every acquire of that name, as Redisson's fair lock must be.
    pub fn fair(mut self) -> Self {
        self.fair = true;
        self
    }

    /// Acquires as `owner`: re-enters its hold if it has one. An owner belongs to the client that
    /// made it, so the acquire runs on that client.
    pub fn owner(self, owner: &'a LockOwner) -> Self {
        Acquire {
            client: owner.client(),
            owner: Some(owner.id()),
            ..self
        }
    }

    /// Waits at most `budget` for the lock (zero makes one attempt); awaiting then gives `None`
    /// if the budget ran out while another owner held it.
    pub fn wait(self, budget: Duration) -> Acquire<'a, WithinBudget> {
        Acquire {
            client: self.client,
            name: self.name,
            owner: self.owner,
            lease: self.lease,
            wait: Wait::Budget(Millis::from_duration(budget)),
            fenced: self.fenced,
            fair: self.fair,
            rw: self.rw,
            shape: PhantomData,
        }
    }

    /// Makes it an acquire of `side` of the read-write lock of this name.
    pub(super) fn read_write(mut self, side: RwSide) -> Self {
        self.rw = Some(side);
        self
    }

    /// [`lease`](Self::lease) when there is one, else the watchdog.
    pub(super) fn lease_or_watchdog(mut self, lease: Option<Duration>) -> Self {
        self.lease = lease;
        self
    }

    /// Acquires as the owner `id` of this same client.
    pub(super) fn owner_id(mut self, id: OwnerId) -> Self {
        self.owner = Some(id);
        self
    }

    fn into_acquire_future(self) -> AcquireFuture<'a, W> {
        let lease = self
            .lease
            .map(|lease| Lease::new(Millis::from_duration(lease)))
            .transpose();
        let (fair, rw) = (self.fair, self.rw);
        let request = lease.map_err(LockError::from).map(|lease| {
            let acquire = AcquireRequest {
                name: self.name,
                owner: self.owner,
                lease,
                wait: self.wait,
                fenced: self.fenced,
            };
            if let Some(side) = rw {
                Request::ReadWriteAcquire { acquire, side }
            } else if fair {
                Request::FairAcquire {
                    acquire,
                    wall_ms: super::unix_ms(),
                }
            } else {
                Request::Acquire(acquire)
            }
        });
        AcquireFuture {
            client: self.client,
            stage: Stage::Unsent(request),
            rw,
            shape: PhantomData,
        }
    }
}

impl<W> fmt::Debug for Acquire<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("client_id", &self.client.client_id())
            .field("name", &self.name)
            .field("owner", &self.owner)
            .field("lease", &self.lease)
            .field("wait", &self.wait)
            .field("fenced", &self.fenced)
            .field("fair", &self.fair)
            .field("read_write", &self.rw)
            .finish()
    }
}

impl<'a> IntoFuture for Acquire<'a, UntilAcquired> {
    type Output = Result<LockGuard, LockError>;
    type IntoFuture = AcquireFuture<'a, UntilAcquired>;

    fn into_future(self) -> Self::IntoFuture {
        self.into_acquire_future()
    }
}

impl<'a> IntoFuture for Acquire<'a, WithinBudget> {
    type Output = Result<Option<LockGuard>, LockError>;
    type IntoFuture = AcquireFuture<'a, WithinBudget>;

    fn into_future(self) -> Self::IntoFuture {
        self.into_acquire_future()
    }
}

/// An [`Acquire`] being awaited. Dropping it cancels the acquire and leaves nothing behind.
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct AcquireFuture<'a, W> {
    client: &'a LockClient,
    stage: Stage<'a>,
    rw: Option<RwSide>,
    shape: PhantomData<fn() -> W>,
}

enum Stage<'a> {
    /// Not polled yet: the request to send, or why it cannot be.
    Unsent(Result<Request, LockError>),
    Sent(Exchange<'a>),
    Finished,
}

impl<W> AcquireFuture<'_, W> {
    /// Drives the acquire: `None` when a wait budget ran out.
    fn poll_grant(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<LockGuard>, LockError>> {
        loop {
            match std::mem::replace(&mut self.stage, Stage::Finished) {
                Stage::Unsent(request) => {
                    self.stage = Stage::Sent(self.client.send(request?)?);
                }
                Stage::Sent(mut exchange) => match Pin::new(&mut exchange).poll(cx) {
                    Poll::Pending => {
                        self.stage = Stage::Sent(exchange);
                        return Poll::Pending;
                    }
                    Poll::Ready(answer) => {
                        return Poll::Ready(self.client.guard_of(answer?, self.rw));
                    }
                },
                Stage::Finished => panic!("an AcquireFuture was polled after it completed"),
            }
        }
    }
}

impl Future for AcquireFuture<'_, UntilAcquired> {
    type Output = Result<LockGuard, LockError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A wait without a budget ends only with a grant or an error.
        self.get_mut()
            .poll_grant(cx)
            .map(|grant| grant?.ok_or_else(|| super::unexpected(Done::NotAcquired)))
    }
}

impl Future for AcquireFuture<'_, WithinBudget> {
    type Output = Result<Option<LockGuard>, LockError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().poll_grant(cx)
    }
}

impl<W> fmt::Debug for AcquireFuture<'_, W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stage = match &self.stage {
            Stage::Unsent(_) => "unsent",
            Stage::Sent(_) => "sent",
            Stage::Finished => "finished",
        };
        f.debug_struct("AcquireFuture")
            .field("client_id", &self.client.client_id())
            .field("stage", &stage)
            .finish()
    }
}

impl LockClient {
    /// The guard an acquire's answer gives: `None` when its wait budget ran out.
    fn guard_of(&self, answer: Answer, rw: Option<RwSide>) -> Result<Option<LockGuard>, LockError> {
        match answer.result? {
            Done::Acquired(acquired) => {
                let (Some(status), Some(ticket)) = (answer.status, answer.ticket) else {
                    return Err(LockError::ClientStopped);
                };
                let guard = LockGuard::new(self.clone(), ticket, status, &acquired);
                Ok(Some(guard.on_side(rw)))
            }
            Done::NotAcquired => Ok(None),
            other => Err(super::unexpected(other)),
        }
    }
}

/// A fenced grant as the `lock*_fenced` shorthands return it: the guard and its grant's token.
pub(super) fn with_token(guard: LockGuard) -> (LockGuard, u64) {
    let token = guard.grant_token().unwrap_or_default();
    (guard, token)
}
