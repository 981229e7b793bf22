//! The lock client as a sans-IO state machine.
//!
//! [`LockMachine`] decides every call the lock makes and every answer it gives, and does nothing
//! else: it never sleeps, spawns, reads a clock or draws randomness. Its owner (the crate's async
//! driver, which sits above it, or the simulator) feeds it [`Input`]s with the current time, pulls
//! [`Output`]s (calls to run, channels to subscribe, completions, lock events) with
//! [`poll_output`](LockMachine::poll_output), and wakes it when
//! [`poll_timeout`](LockMachine::poll_timeout) says so. The shape is `quinn-proto`'s.
//!
//! The enums of that exchange ([`Input`], [`Request`], [`Wait`], [`Output`], [`Call`], [`Done`],
//! [`LockEvent`]) are exhaustive on purpose: a driver handles every case, and a case added later
//! must stop it from compiling rather than be ignored. So are the values whose cases Redis or the
//! backend contract fix ([`UnlockOutcome`], [`RemainingLease`], [`HoldMode`], [`BackendError`],
//! [`PubSubEvent`]). What an application reads and may see grow ([`LockError`], [`Operation`],
//! [`HoldState`]) is `#[non_exhaustive]`, as is the config's [`ConfigError`].
//!
//! Where to find each rule:
//! - `acquire.rs`: an acquire call, its attempts under one request id, and the wait loop;
//! - `kind.rs`: the kinds of acquire and release (plain, fenced, fair, read-write): the script
//!   each sends and how its reply reads;
//! - `fair.rs`: the fair lock's acquire, its queue and its clock;
//! - `read_write.rs`: the read-write lock's acquires, force unlock and the renewal of read holds;
//! - `release.rs`: unlock (and the release that undoes an abandoned acquire);
//! - `watchdog.rs`: the renewal passes, `max_hold`;
//! - `waiters.rs`: unlock-channel subscriptions and who a message wakes;
//! - `hold.rs`: what the client knows about each hold, and `valid_until`;
//! - `attempts.rs`: the retry rule for calls whose outcome is unknown;
//! - `replicas.rs`: the replica check after each write (`WAIT`), and what falls short;
//! - `input.rs` and `output.rs`: the types of the exchange, [`HoldState`] among them.

/// `fn $name(&mut self, op: u64) -> Option<&mut $op>`: the pending op `op`, if it is one of
/// `OpKind::$kind`. Each kind of op that resends its own attempts looks itself up this way; the
/// macro writes the lookup once instead of once per kind.
macro_rules! op_of_kind {
    ($name:ident, $kind:ident, $op:ty) => {
        fn $name(&mut self, op: u64) -> Option<&mut $op> {
            match self.ops.get_mut(op).map(|o| &mut o.kind) {
                Some(OpKind::$kind(x)) => Some(x),
                _ => None,
            }
        }
    };
}

mod acquire;
mod attempts;
mod error;
mod fair;
mod hold;
mod ids;
mod input;
mod kind;
mod output;
mod query;
mod read_write;
mod release;
mod replicas;
mod slab;
mod sorted;
mod timers;
mod waiters;
mod watchdog;

pub use error::{LockError, Operation};
pub use ids::{IdSource, SeededIds};
pub use input::{AcquireRequest, BackendError, Input, LockName, PubSubEvent, Request, Wait};
pub use kind::RwSide;
pub use output::{
    Acquired, Call, Done, HoldRef, HoldState, LockEvent, Output, RemainingLease, UnlockOutcome,
};

use crate::config::{ConfigError, LockConfig};
use crate::keys::{LockKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::script::PublishCommand;
use crate::time::{Lease, MonoTime};
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use acquire::AcquireOp;
use hold::Hold;
use kind::AcquireKind;
use query::{Query, SingleOp};
use release::ReleaseOp;
use slab::Slab;
use sorted::SortedMap;
use timers::{TimerKind, Timers};
use waiters::Channel;
use watchdog::Watchdog;

/// An application operation, numbered by the driver; its [`Output::Done`] carries the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId(pub u64);

/// A call the machine asked for, numbered by the machine; the driver echoes it back with the
/// result in [`Input::CallResult`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// The per-holder part of an [`Owner`] (`<client_id>:<owner_id>`): one per guard chain or owner
/// handle, never a thread or task id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OwnerId(pub u64);

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One hold of a lock by an owner on this client, from its grant until its last unlock.
///
/// A hold that is lost and later taken again by the same owner is a new hold with a new id, so a
/// guard of the old one can never release the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HoldId(pub u64);

/// A lock's name (shared with the request that named it), owner and, for a read-write lock, the
/// side held: the identity of a hold record. Ordered as the name is, byte by byte.
pub(crate) type HoldKey = (LockName, OwnerId, Option<RwSide>);

/// The lock name of a hold's key, for an error or a log line.
pub(crate) fn name_of(key: &HoldKey) -> String {
    key.0.to_string()
}

/// A lock's keys as the machine keeps them: built once per name (the key cache), shared by its
/// hold and operations, so handing them on is one count, not one per key.
pub(crate) type SharedKeys = std::sync::Arc<LockKeys>;

/// How a hold keeps its lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldMode {
    /// No lease given: `watchdog_timeout`, renewed by the watchdog while the hold lives.
    Watchdog,
    /// A fixed lease: the lock simply expires after it.
    Lease(Lease),
}

impl fmt::Display for HoldMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HoldMode::Watchdog => f.write_str("watchdog"),
            HoldMode::Lease(l) => write!(f, "a fixed lease of {l}"),
        }
    }
}

/// What the client knows about one hold, for tests and the simulator's checkers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldSnapshot {
    /// The hold.
    pub id: HoldId,
    /// Its mode.
    pub mode: HoldMode,
    /// The count the client believes the server has.
    pub count: u32,
    /// Acquires of this owner in flight.
    pub pending: u32,
    /// Until when it is certainly held.
    pub valid_until: MonoTime,
    /// Whether the watchdog renews it (a watchdog hold, not past `max_hold`).
    pub renewing: bool,
    /// The newest fencing token.
    pub token: Option<u64>,
}

/// An output waiting in the queue. Renewal batches are built when they are polled, so a hold
/// unlocked after its pass started is left out of a batch that has not been sent yet.
#[derive(Debug)]
enum Queued {
    Ready(Output),
    RenewBatch { id: CallId, holds: Vec<HoldRefKey> },
}

/// A hold as a renewal batch names it: its key and the id it had when the pass started.
type HoldRefKey = (HoldKey, HoldId);

/// What a call in flight was for.
#[derive(Debug)]
enum CallPurpose {
    /// An attempt of an acquire or release operation, sent at `sent`.
    Attempt { op: u64, sent: MonoTime },
    /// A renewal batch of the watchdog.
    Renew {
        holds: Vec<HoldRefKey>,
        sent: MonoTime,
    },
    /// The one call of a force unlock or query.
    Single { op: u64 },
}

/// An operation in progress.
#[derive(Debug)]
struct Op {
    /// Who gets the result; `None` once cancelled, or for an operation the machine started itself.
    reply_to: Option<OpId>,
    kind: OpKind,
    /// The operation's one pending wake-up (a retry, the end of a wait round, the end of its
    /// wait budget), cancelled when it ends.
    timer: Option<timers::TimerKey>,
}

#[derive(Debug)]
enum OpKind {
    Acquire(AcquireOp),
    Release(ReleaseOp),
    Single(SingleOp),
    GiveUp(fair::GiveUpOp),
}

/// The lock client's state machine. See the [module docs](self).
pub struct LockMachine {
    config: LockConfig,
    client_id: String,
    ids: Box<dyn IdSource>,
    now: MonoTime,
    /// Unboxed: a hold's record boxes a fair or read-write lock's keys, the rare and large part,
    /// and is small enough to sit in the tree's nodes, where a box cost an allocation per hold.
    holds: BTreeMap<HoldKey, Hold>,
    /// Holds found lost, with the counts their guards still have, so that their unlocks are
    /// answered "not locked" without a call that could touch a newer hold of the same owner.
    lost: BTreeMap<HoldId, u32>,
    next_hold: u64,
    /// Unboxed, in reused slots: an operation is a few hundred bytes (its kind boxes a fair or
    /// read-write lock's keys), written once when it starts, where a box cost an allocation and
    /// an ordered container moved it at every insert and removal.
    ops: Slab<Op>,
    op_index: SortedMap<OpId, u64>,
    calls: SortedMap<CallId, CallPurpose>,
    next_call: u64,
    watchdog: Watchdog,
    channels: BTreeMap<Bytes, Channel>,
    timers: Timers,
    out: VecDeque<Queued>,
    broken: Option<BrokenRule>,
    /// The fair lock's clock: a reading of unix ms and the machine's time when it was taken.
    wall_anchor: Option<(i64, MonoTime)>,
    /// The command the scripts publish unlock messages with (the backend's choice).
    publish: PublishCommand,
    /// The keys of the locks named lately, built once per name rather than once per call
    /// (emptied whenever it reaches [`KEY_CACHE_NAMES`], so a client that touches many names
    /// keeps no more than that).
    ///
    /// A hash map with a fixed hasher: a lookup is the cache's whole use (it is never iterated,
    /// only emptied), and hashing a name costs a tenth of comparing it down a tree of a thousand.
    key_cache: HashMap<String, SharedKeys, BuildHasherDefault<NameHasher>>,
}

/// FNV-1a over 64 bits, the key cache's hasher: fixed (no seed, so nothing varies from run to
/// run) and a few instructions a byte, where the standard library's SipHash cost more than the
/// rest of a lookup. The cache holds names the application chose, and at most
/// [`KEY_CACHE_NAMES`] of them, so a hash built to resist chosen collisions buys nothing here.
struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// How many lock names' keys the machine keeps built.
const KEY_CACHE_NAMES: usize = 1024;

/// A rule the machine can be told to break, so that a test can prove its checkers notice.
/// Never set outside such a test.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokenRule {
    /// Leave a hold on the watchdog after its last unlock (Redisson #7272's bug).
    RenewAfterUnlock,
    /// Ignore the sign that the server may have lost data (a lost subscriber connection): keep
    /// promising `valid_until` as if nothing happened.
    IgnoreDataLoss,
}

impl fmt::Debug for LockMachine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockMachine")
            .field("client_id", &self.client_id)
            .field("now", &self.now)
            .field("holds", &self.holds.len())
            .field("ops", &self.ops.len())
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

impl LockMachine {
    /// A machine with a validated `config`, drawing its client id and every request and owner id
    /// from `ids`.
    pub fn new(config: LockConfig, ids: impl IdSource) -> Result<LockMachine, ConfigError> {
        config.validate()?;
        let mut ids: Box<dyn IdSource> = Box::new(ids);
        let client_id = format!("{:032x}", ids.next_u128());
        Ok(LockMachine {
            config,
            client_id,
            ids,
            now: MonoTime::ZERO,
            holds: BTreeMap::new(),
            lost: BTreeMap::new(),
            next_hold: 0,
            ops: Slab::default(),
            op_index: SortedMap::default(),
            calls: SortedMap::default(),
            next_call: 0,
            watchdog: Watchdog::default(),
            channels: BTreeMap::new(),
            timers: Timers::default(),
            out: VecDeque::new(),
            broken: None,
            wall_anchor: None,
            publish: PublishCommand::Publish,
            key_cache: HashMap::default(),
        })
    }

    /// Makes the machine break `rule` from now on (tests of the simulator's checkers only).
    #[doc(hidden)]
    pub fn break_rule(&mut self, rule: BrokenRule) {
        self.broken = Some(rule);
    }

    /// Makes every script that publishes an unlock message publish with `command`: `SPUBLISH`
    /// when the backend subscribes to shard channels (a cluster with sharded pub/sub), as Redisson
    /// 3.22+ does; `PUBLISH` (the default) otherwise. The async client sets it from
    /// [`Backend::publish_command`](crate::Backend::publish_command).
    pub fn set_publish_command(&mut self, command: PublishCommand) {
        self.publish = command;
    }

    /// This client's id, the first part of every owner it writes.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The configuration.
    pub fn config(&self) -> &LockConfig {
        &self.config
    }

    /// The owner string of `owner` on this client.
    pub fn owner(&self, owner: OwnerId) -> Owner {
        Owner::new(&self.client_id, owner.0)
    }

    /// What the client knows about `owner`'s hold of `name`, if it has one (held or being
    /// acquired).
    pub fn hold(&self, name: &str, owner: OwnerId) -> Option<HoldSnapshot> {
        self.hold_of(name, owner, None)
    }

    /// What the client knows about `owner`'s read or write hold of the read-write lock `name`.
    pub fn read_write_hold(
        &self,
        name: &str,
        owner: OwnerId,
        side: RwSide,
    ) -> Option<HoldSnapshot> {
        self.hold_of(name, owner, Some(side))
    }

    fn hold_of(&self, name: &str, owner: OwnerId, side: Option<RwSide>) -> Option<HoldSnapshot> {
        self.holds
            .get(&(LockName::from(name), owner, side))
            .map(|h| HoldSnapshot {
                id: h.id,
                mode: h.mode,
                count: h.count,
                pending: h.pending,
                valid_until: h.valid_until,
                renewing: h.renewable(),
                token: h.token,
            })
    }

    /// Operations in progress (cancelled acquires still resolving their outcome included).
    pub fn ops_in_progress(&self) -> usize {
        self.ops.len()
    }

    /// The operation the call `id` works for, while someone waits for that operation: an
    /// attempt of an acquire or unlock, or the one call of a force unlock or query. `None` for a
    /// renewal batch, a call of an operation nobody waits for (a background release, a cancelled
    /// acquire resolving its outcome), and a call whose result came back. A driver may let that
    /// operation's caller run the call itself; the machine does not mind who runs it.
    pub fn call_op(&self, id: CallId) -> Option<OpId> {
        let op = match self.calls.get(&id)? {
            CallPurpose::Attempt { op, .. } | CallPurpose::Single { op } => *op,
            CallPurpose::Renew { .. } => return None,
        };
        self.ops.get(op)?.reply_to
    }

    /// Feeds one input at time `now` (a monotonic clock the caller owns; a reading earlier than a
    /// previous one is taken as the previous one).
    pub fn handle(&mut self, input: Input, now: MonoTime) {
        self.now = self.now.max(now);
        match input {
            Input::Request { op, request } => self.on_request(op, request),
            Input::Cancel { op } => self.on_cancel(op),
            Input::CallResult { id, result } => self.on_call_result(id, result, None),
            Input::SyncedCallResult {
                id,
                reply,
                replicas,
            } => {
                let shortfall = self.shortfall(replicas);
                self.on_call_result(id, Ok(reply), shortfall);
            }
            Input::Subscribed { channel, result } => self.on_subscribed(channel, result),
            Input::PubSub(event) => self.on_pubsub(event),
            Input::Timeout => self.on_timeout(),
        }
    }

    /// The next output, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        loop {
            match self.out.pop_front()? {
                Queued::Ready(output) => return Some(output),
                Queued::RenewBatch { id, holds } => {
                    if let Some(output) = self.build_renew_batch(id, holds) {
                        return Some(output);
                    }
                }
            }
        }
    }

    /// When the machine next needs [`Input::Timeout`], if ever.
    pub fn poll_timeout(&self) -> Option<MonoTime> {
        self.timers.next()
    }

    fn on_request(&mut self, op: OpId, request: Request) {
        let named = match &request {
            Request::Acquire(req) => Some((&*req.name, Operation::Acquire)),
            Request::ForceUnlock { name } => Some((&**name, Operation::ForceUnlock)),
            Request::IsLocked { name } => Some((&**name, Operation::IsLocked)),
            Request::HoldCount { name, .. } => Some((&**name, Operation::HoldCount)),
            Request::RemainingLease { name } => Some((&**name, Operation::RemainingLease)),
            Request::FairAcquire { acquire, .. } => Some((&*acquire.name, Operation::Acquire)),
            Request::FairForceUnlock { name, .. } => Some((&**name, Operation::ForceUnlock)),
            Request::ReadWriteAcquire { acquire, .. } => Some((&*acquire.name, Operation::Acquire)),
            Request::ReadWriteForceUnlock { name, .. } => Some((&**name, Operation::ForceUnlock)),
            // No hold has an empty name, so its unlock is answered "not locked".
            Request::Release { .. } | Request::NewOwner => None,
        };
        if let Some(("", operation)) = named {
            self.done(Some(op), Err(LockError::EmptyName { operation }));
            return;
        }
        match request {
            Request::Acquire(req) => {
                let kind = if req.fenced {
                    AcquireKind::Fenced
                } else {
                    AcquireKind::Plain
                };
                self.start_acquire(op, req, kind)
            }
            Request::Release { hold, name, owner } => self.start_release(op, hold, name, owner),
            Request::NewOwner => {
                let owner = self.new_owner();
                self.done(Some(op), Ok(Done::Owner(owner)));
            }
            Request::ForceUnlock { name } => self.start_force_unlock(op, name),
            Request::IsLocked { name } => self.start_query(op, Query::IsLocked, name),
            Request::HoldCount { name, owner } => {
                self.start_query(op, Query::HoldCount(owner), name)
            }
            Request::RemainingLease { name } => self.start_query(op, Query::RemainingLease, name),
            Request::FairAcquire { acquire, wall_ms } => {
                self.start_fair_acquire(op, acquire, wall_ms)
            }
            Request::FairForceUnlock { name, wall_ms } => {
                self.start_fair_force_unlock(op, name, wall_ms)
            }
            Request::ReadWriteAcquire { acquire, side } => self.start_rw_acquire(op, acquire, side),
            Request::ReadWriteForceUnlock { name, side } => {
                self.start_rw_force_unlock(op, name, side == RwSide::Write)
            }
        }
    }

    fn on_cancel(&mut self, op: OpId) {
        let Some(key) = self.op_index.remove(&op) else {
            return;
        };
        let Some(entry) = self.ops.get_mut(key) else {
            return;
        };
        entry.reply_to = None;
        if matches!(entry.kind, OpKind::Acquire(_)) {
            self.abandon_acquire(key);
        }
        // A release or query keeps going: its effect on the server does not depend on anyone
        // waiting for the answer (a guard's unlock must happen even if its caller walked away).
    }

    fn on_call_result(
        &mut self,
        id: CallId,
        result: Result<Reply, BackendError>,
        shortfall: Option<replicas::Shortfall>,
    ) {
        let Some(purpose) = self.calls.remove(&id) else {
            return;
        };
        match purpose {
            CallPurpose::Attempt { op, sent } => match self.ops.get(op).map(|o| &o.kind) {
                Some(OpKind::Acquire(_)) => self.on_acquire_result(op, sent, result, shortfall),
                Some(OpKind::Release(_)) => self.on_release_result(op, sent, result, shortfall),
                // A fair waiter leaving its queue: nothing a failover could undo harms anyone
                // (the queue's timeouts purge a place that comes back).
                Some(OpKind::GiveUp(_)) => self.on_give_up_result(op, sent, result),
                _ => {}
            },
            CallPurpose::Renew { holds, sent } => {
                self.on_renew_result(id, holds, sent, result, shortfall)
            }
            CallPurpose::Single { op } => self.on_single_result(op, result),
        }
    }

    fn on_timeout(&mut self) {
        while let Some((key, kind)) = self.timers.pop_due(self.now) {
            match kind {
                TimerKind::Watchdog => {
                    if self.watchdog.timer == Some(key) {
                        self.watchdog.timer = None;
                        self.start_pass();
                    }
                }
                TimerKind::Op(op) => self.on_op_timer(op, key),
                TimerKind::Validity(hold_key, id) => self.on_validity_timer(hold_key, id, key),
                TimerKind::RenewRetry(id) => self.retry_renew_batch(id),
            }
        }
    }

    fn on_op_timer(&mut self, op: u64, key: timers::TimerKey) {
        let Some(entry) = self.ops.get_mut(op) else {
            return;
        };
        if entry.timer != Some(key) {
            return;
        }
        entry.timer = None;
        match entry.kind {
            OpKind::Acquire(_) => self.on_acquire_timer(op),
            OpKind::Release(_) => self.send_release_attempt(op),
            OpKind::Single(_) => {}
            OpKind::GiveUp(_) => self.send_give_up_attempt(op),
        }
    }

    fn new_owner(&mut self) -> OwnerId {
        OwnerId(self.ids.next_u128() as u64)
    }

    fn new_request_id(&mut self) -> RequestId {
        RequestId(self.ids.next_u128())
    }

    fn new_hold_id(&mut self) -> HoldId {
        self.next_hold += 1;
        HoldId(self.next_hold)
    }

    fn new_call_id(&mut self) -> CallId {
        self.next_call += 1;
        CallId(self.next_call)
    }

    fn insert_op(&mut self, reply_to: Option<OpId>, kind: OpKind) -> u64 {
        let key = self.ops.insert(Op {
            reply_to,
            kind,
            timer: None,
        });
        if let Some(op) = reply_to {
            self.op_index.insert(op, key);
        }
        key
    }

    /// Arms `op`'s wake-up for `at`.
    fn arm_op_timer(&mut self, op: u64, at: MonoTime) {
        let timer = self.timers.arm(at, TimerKind::Op(op));
        if let Some(entry) = self.ops.get_mut(op) {
            entry.timer = Some(timer);
        }
    }

    /// Cancels `op`'s wake-up, if it has one.
    fn cancel_op_timer(&mut self, op: u64) {
        if let Some(entry) = self.ops.get_mut(op) {
            self.timers.cancel(entry.timer.take());
        }
    }

    /// Removes an operation, with its wake-up, and answers whoever waits for it.
    fn finish_op(&mut self, key: u64, result: Result<Done, LockError>) {
        let Some(op) = self.ops.remove(key) else {
            return;
        };
        self.timers.cancel(op.timer);
        if let Some(reply_to) = op.reply_to {
            self.op_index.remove(&reply_to);
            self.done(Some(reply_to), result);
        }
    }

    fn done(&mut self, op: Option<OpId>, result: Result<Done, LockError>) {
        if let Some(op) = op {
            self.push(Output::Done { op, result });
        }
    }

    fn push(&mut self, output: Output) {
        self.out.push_back(Queued::Ready(output));
    }

    fn send_call(&mut self, mut call: Call, purpose: CallPurpose) -> CallId {
        if let Call::Script(script) = &mut call {
            if let CallPurpose::Attempt { .. } = &purpose {
                script.sync = self.replica_wait();
            }
            script.set_publish(self.publish);
        }
        let id = self.new_call_id();
        self.calls.insert(id, purpose);
        self.push(Output::Call { id, call });
        id
    }

    /// The keys of the lock `name`: from the cache, or built and kept there.
    fn keys(&mut self, name: &str) -> SharedKeys {
        if let Some(keys) = self.key_cache.get(name) {
            return keys.clone();
        }
        if self.key_cache.len() >= KEY_CACHE_NAMES {
            self.key_cache.clear();
        }
        let keys = SharedKeys::new(self.config.key_layout.lock(name));
        self.key_cache.insert(name.to_owned(), keys.clone());
        keys
    }

    fn lease_of(&self, mode: HoldMode) -> Lease {
        match mode {
            HoldMode::Watchdog => self.config.watchdog_lease(),
            HoldMode::Lease(lease) => lease,
        }
    }

    /// `anchor + lease − drift margin`: how long a TTL set by a call first sent at `anchor`
    /// certainly lasts, measured on the client's clock.
    fn valid_until_after(&self, anchor: MonoTime, lease: Lease) -> MonoTime {
        (anchor + lease.millis()).saturating_sub(self.config.drift_margin(lease))
    }

    fn event(&mut self, event: LockEvent) {
        self.push(Output::Event(event));
    }
}
