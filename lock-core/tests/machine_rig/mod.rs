//! A deterministic rig for stepping one or more lock machines against a `ReferenceStore`, with no
//! async runtime: time moves only when a test says so, calls are answered (or lost) when a test
//! says so. The quinn-proto style of test: the pure core, a simulated link, a manual clock.
//!
//! sim-tests' world (`sim-tests/src/world/`) drives the same machine deterministically too, but
//! it cannot stand in for this rig, because the world is a closed system and these tests are open
//! ones:
//!
//! - A world plays a `Case` fixed before it starts: each client's loop of acquire, work and
//!   unlock, latencies and losses drawn from the seed, faults at scheduled times, run to the
//!   horizon. Here the test is the workload and the network, deciding after each step: it holds
//!   a renewal's reply from 20 s to 24 s
//!   (`watchdog_pass_starts_a_period_after_the_previous_pass_ended`), loses each attempt of an
//!   acquire once it sees it (`Fate::Hold`, then `answer(id, Fate::DropRequest)`), cancels an
//!   operation whose call is in flight
//!   (`a_cancelled_acquire_that_succeeds_is_released_and_never_renewed`), hands a machine a
//!   subscription loss by hand (`a_restored_subscription_makes_every_waiter_retry`), and changes
//!   the server's keys behind the machine's back (`persist`, `del`).
//! - A call here is delivered the instant it is sent and time moves only by `advance_to`, so the
//!   tests assert exact instants (`acquire_times == [t(0), t(0), t(10_000)]`, a PTTL of exactly
//!   24 000 ms); a world's calls take the case's latency and its timers fire on clients' drifting
//!   clocks.
//! - The store is lock-core's own `ReferenceStore` running the scripts' native twins, so the
//!   machine's tests need nothing but lock-core; a world runs fake-redis's engine.
//!
//! Driving these tests through the world would mean giving it an open mode (an outside workload,
//! a fate per call, a hand-moved clock): a second driver inside the world rather than one driver
//! fewer. So each keeps its job. This rig specifies the machine one behaviour at a time, with
//! every reply, loss and instant chosen by the test and every call checked. The world checks
//! whole workloads against the fake's engine under generated networks and faults, thousands of
//! cases per suite, judged by the checkers, shrunk and replayed from their text.

#![allow(dead_code)]

use bytes::Bytes;
use lock_core::machine::{
    AcquireRequest, Call, CallId, Done, Input, LockEvent, LockMachine, OpId, Output, Request,
    SeededIds, Wait,
};
use lock_core::script::reference::ReferenceStore;
use lock_core::script::{ReplicaAcks, Store};
use lock_core::{BackendError, Lease, LockConfig, LockError, Millis, MonoTime, PubSubEvent, Reply};
use std::collections::{BTreeMap, BTreeSet};

/// The unix time of the rig's `MonoTime::ZERO`.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// Runs a call against the store as a Redis server would.
pub fn execute(store: &mut ReferenceStore, call: &Call) -> Result<Reply, BackendError> {
    match call {
        Call::Script(script) => match script.run_native(store) {
            Reply::Error(text) => Err(BackendError::Server(text)),
            reply => Ok(reply),
        },
        Call::Command(argv) => command(store, argv),
    }
}

/// The plain commands the lock uses, by hand.
pub fn command(store: &mut ReferenceStore, argv: &[Bytes]) -> Result<Reply, BackendError> {
    let name = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
    let err = |e: lock_core::script::CommandError| BackendError::Server(e.0);
    match (name.as_str(), argv.len()) {
        ("EXISTS", 2) => Ok(Reply::Int(i64::from(store.exists(&argv[1]).map_err(err)?))),
        ("HGET", 3) => Ok(store
            .hget(&argv[1], &argv[2])
            .map_err(err)?
            .map_or(Reply::Nil, Reply::Bulk)),
        ("PTTL", 2) => Ok(Reply::Int(store.pttl(&argv[1]).map_err(err)?)),
        ("PERSIST", 2) => Ok(Reply::Int(i64::from(store.persist(&argv[1])))),
        _ => Err(BackendError::Server(format!(
            "ERR unknown command '{name}' in the test rig"
        ))),
    }
}

/// What happens to one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Applied and answered.
    Reply,
    /// Applied, the reply lost (the driver reports unknown).
    DropReply,
    /// Never applied (the driver reports unknown after its timeout).
    DropRequest,
    /// Never applied, and the backend knows it.
    Refused,
    /// Left in flight; the test answers it later.
    Hold,
    /// Applied and answered, with the replica count of its `WAIT` (a call that asked for none
    /// is answered plainly).
    ReplyWithReplicas {
        /// Replicas that acknowledged.
        acked: u32,
        /// Replicas the primary has.
        connected: u32,
    },
}

/// A call the machine sent.
#[derive(Clone, Debug)]
pub struct Sent {
    pub id: CallId,
    pub call: Call,
    pub at: MonoTime,
    pub client: usize,
}

impl Sent {
    pub fn script(&self) -> &'static str {
        match &self.call {
            Call::Script(s) => s.script.name,
            Call::Command(_) => "command",
        }
    }

    /// The keys of a script call.
    pub fn keys(&self) -> Vec<Bytes> {
        match &self.call {
            Call::Script(s) => s.keys.clone(),
            Call::Command(argv) => argv[1..].to_vec(),
        }
    }
}

/// One machine and what it said.
pub struct Client {
    pub machine: LockMachine,
    pub done: BTreeMap<OpId, (MonoTime, Result<Done, LockError>)>,
    pub events: Vec<(MonoTime, LockEvent)>,
    pub subscribed: BTreeSet<Bytes>,
    pub subscribe_log: Vec<(MonoTime, Output)>,
    /// Subscribe calls are answered at once unless this is false.
    pub auto_subscribe: bool,
    pub unanswered_subscribes: Vec<Bytes>,
}

/// Machines, a store, a clock, and every call ever sent.
pub struct Rig {
    pub clients: Vec<Client>,
    pub store: ReferenceStore,
    pub now: MonoTime,
    pub sent: Vec<Sent>,
    pub in_flight: Vec<Sent>,
    /// Decides the fate of each call as it is delivered (default: answer).
    pub fate: Box<dyn FnMut(&Sent) -> Fate>,
    published_seen: usize,
    next_op: u64,
}

impl Rig {
    pub fn new(config: LockConfig) -> Rig {
        let mut rig = Rig {
            clients: Vec::new(),
            store: ReferenceStore::new(EPOCH_MS),
            now: MonoTime::ZERO,
            sent: Vec::new(),
            in_flight: Vec::new(),
            fate: Box::new(|_| Fate::Reply),
            published_seen: 0,
            next_op: 0,
        };
        rig.add_client(config);
        rig
    }

    /// Adds a client; returns its index.
    pub fn add_client(&mut self, config: LockConfig) -> usize {
        let seed = self.clients.len() as u64 + 1;
        let machine = LockMachine::new(config, SeededIds::new(seed)).expect("valid config");
        self.clients.push(Client {
            machine,
            done: BTreeMap::new(),
            events: Vec::new(),
            subscribed: BTreeSet::new(),
            subscribe_log: Vec::new(),
            auto_subscribe: true,
            unanswered_subscribes: Vec::new(),
        });
        self.clients.len() - 1
    }

    pub fn machine(&self, client: usize) -> &LockMachine {
        &self.clients[client].machine
    }

    /// Feeds `input` to `client` now, then collects its outputs and delivers calls.
    pub fn input(&mut self, client: usize, input: Input) {
        let now = self.now;
        self.clients[client].machine.handle(input, now);
        self.settle();
    }

    /// Feeds `input` without polling outputs (to look at what is queued).
    pub fn input_raw(&mut self, client: usize, input: Input) {
        let now = self.now;
        self.clients[client].machine.handle(input, now);
    }

    pub fn request(&mut self, client: usize, request: Request) -> OpId {
        self.next_op += 1;
        let op = OpId(self.next_op);
        self.input(client, Input::Request { op, request });
        op
    }

    pub fn lock(&mut self, client: usize, name: &str) -> OpId {
        self.acquire(client, name, None, Wait::Forever)
    }

    pub fn acquire(&mut self, client: usize, name: &str, lease: Option<u64>, wait: Wait) -> OpId {
        self.request(
            client,
            Request::Acquire(AcquireRequest {
                name: name.into(),
                owner: None,
                lease: lease.map(|ms| Lease::from_millis(ms).unwrap()),
                wait,
                fenced: false,
            }),
        )
    }

    /// The result of `op`, if finished.
    pub fn result(&self, client: usize, op: OpId) -> Option<&Result<Done, LockError>> {
        self.clients[client].done.get(&op).map(|(_, r)| r)
    }

    pub fn finished_at(&self, client: usize, op: OpId) -> Option<MonoTime> {
        self.clients[client].done.get(&op).map(|(t, _)| *t)
    }

    /// The grant of `op`, panicking if it was not acquired.
    pub fn acquired(&self, client: usize, op: OpId) -> lock_core::machine::Acquired {
        match self.result(client, op) {
            Some(Ok(Done::Acquired(a))) => a.clone(),
            other => panic!("op {op:?} not acquired: {other:?}"),
        }
    }

    /// Polls every machine's outputs and delivers calls by their fate, until quiet.
    pub fn settle(&mut self) {
        loop {
            let mut progressed = false;
            for c in 0..self.clients.len() {
                while let Some(output) = self.clients[c].machine.poll_output() {
                    progressed = true;
                    self.route(c, output);
                }
                let subs = std::mem::take(&mut self.clients[c].unanswered_subscribes);
                if self.clients[c].auto_subscribe {
                    for channel in subs {
                        progressed = true;
                        self.clients[c].subscribed.insert(channel.clone());
                        let now = self.now;
                        self.clients[c].machine.handle(
                            Input::Subscribed {
                                channel,
                                result: Ok(()),
                            },
                            now,
                        );
                    }
                } else {
                    self.clients[c].unanswered_subscribes = subs;
                }
            }
            let deliverable: Vec<Sent> = std::mem::take(&mut self.in_flight);
            let mut kept = Vec::new();
            for sent in deliverable {
                let fate = (self.fate)(&sent);
                if fate == Fate::Hold {
                    kept.push(sent);
                    continue;
                }
                progressed = true;
                self.deliver(sent, fate);
            }
            self.in_flight = kept;
            self.publish();
            if !progressed {
                return;
            }
        }
    }

    fn route(&mut self, c: usize, output: Output) {
        let now = self.now;
        match output {
            Output::Call { id, call } => {
                let sent = Sent {
                    id,
                    call,
                    at: now,
                    client: c,
                };
                self.sent.push(sent.clone());
                self.in_flight.push(sent);
            }
            Output::Subscribe { channel } => {
                self.clients[c].subscribe_log.push((
                    now,
                    Output::Subscribe {
                        channel: channel.clone(),
                    },
                ));
                self.clients[c].unanswered_subscribes.push(channel);
            }
            Output::Unsubscribe { channel } => {
                self.clients[c].subscribed.remove(&channel);
                self.clients[c]
                    .subscribe_log
                    .push((now, Output::Unsubscribe { channel }));
            }
            Output::Done { op, result } => {
                self.clients[c].done.insert(op, (now, result));
            }
            Output::Event(event) => self.clients[c].events.push((now, event)),
        }
    }

    /// Delivers one call with `fate` now.
    pub fn deliver(&mut self, sent: Sent, fate: Fate) {
        self.store.set_now(EPOCH_MS + self.now.as_millis() as i64);
        let result = match fate {
            Fate::Reply => execute(&mut self.store, &sent.call),
            Fate::DropReply => {
                let _ = execute(&mut self.store, &sent.call);
                Err(BackendError::Unknown("reply dropped".into()))
            }
            Fate::DropRequest => Err(BackendError::Unknown("request dropped".into())),
            Fate::Refused => Err(BackendError::NotApplied("connection refused".into())),
            Fate::Hold => unreachable!(),
            Fate::ReplyWithReplicas { acked, connected } => {
                let synced = matches!(&sent.call, Call::Script(s) if s.sync.is_some());
                match execute(&mut self.store, &sent.call) {
                    Ok(reply) if synced => {
                        let replicas = ReplicaAcks { acked, connected };
                        let input = Input::SyncedCallResult {
                            id: sent.id,
                            reply,
                            replicas,
                        };
                        let now = self.now;
                        self.clients[sent.client].machine.handle(input, now);
                        return;
                    }
                    other => other,
                }
            }
        };
        let now = self.now;
        self.clients[sent.client].machine.handle(
            Input::CallResult {
                id: sent.id,
                result,
            },
            now,
        );
    }

    /// Answers a held call now (the test decided its fate).
    pub fn answer(&mut self, id: CallId, fate: Fate) {
        let idx = self
            .in_flight
            .iter()
            .position(|s| s.id == id)
            .expect("call in flight");
        let sent = self.in_flight.remove(idx);
        self.deliver(sent, fate);
        self.settle();
    }

    fn publish(&mut self) {
        let published = self.store.published()[self.published_seen..].to_vec();
        self.published_seen += published.len();
        for (channel, payload) in published {
            for c in 0..self.clients.len() {
                if self.clients[c].subscribed.contains(&channel) {
                    let now = self.now;
                    self.clients[c].machine.handle(
                        Input::PubSub(PubSubEvent::Message {
                            channel: channel.clone(),
                            payload: payload.clone(),
                        }),
                        now,
                    );
                }
            }
        }
    }

    /// Moves time to `t`, firing every machine's deadlines in order on the way.
    pub fn advance_to(&mut self, t: MonoTime) {
        loop {
            self.settle();
            let next = self
                .clients
                .iter()
                .filter_map(|c| c.machine.poll_timeout())
                .min();
            match next {
                Some(at) if at <= t => {
                    self.now = self.now.max(at);
                    for c in 0..self.clients.len() {
                        if self.clients[c]
                            .machine
                            .poll_timeout()
                            .is_some_and(|d| d <= self.now)
                        {
                            let now = self.now;
                            self.clients[c].machine.handle(Input::Timeout, now);
                        }
                    }
                }
                _ => break,
            }
        }
        self.now = t;
        self.settle();
    }

    pub fn advance(&mut self, ms: u64) {
        let t = self.now + Millis(ms);
        self.advance_to(t);
    }

    /// Send times of renewal calls that named `key`.
    pub fn renewals_of(&self, key: &str) -> Vec<MonoTime> {
        self.sent
            .iter()
            .filter(|s| {
                s.script() == "renew_batch" && s.keys().iter().any(|k| &k[..] == key.as_bytes())
            })
            .map(|s| s.at)
            .collect()
    }

    pub fn calls_named(&self, script: &str) -> Vec<&Sent> {
        self.sent.iter().filter(|s| s.script() == script).collect()
    }

    /// The server's hold count of `owner` on `key`.
    pub fn server_count(&mut self, key: &str, owner: &lock_core::Owner) -> u64 {
        self.store.set_now(EPOCH_MS + self.now.as_millis() as i64);
        self.store
            .hget(key.as_bytes(), owner.as_bytes())
            .unwrap()
            .map_or(0, |b| String::from_utf8_lossy(&b).parse().unwrap())
    }

    pub fn pttl(&mut self, key: &str) -> i64 {
        self.store.set_now(EPOCH_MS + self.now.as_millis() as i64);
        self.store.pttl(key.as_bytes()).unwrap()
    }

    pub fn events(&self, client: usize) -> &[(MonoTime, LockEvent)] {
        &self.clients[client].events
    }
}

pub fn t(ms: u64) -> MonoTime {
    MonoTime(ms)
}
