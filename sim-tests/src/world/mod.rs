//! The simulated world: lock machines, a network, a server, faults, one event queue.
//!
//! Time is simulation milliseconds from 0. Events are ordered by (time, sequence number), so two
//! events at one millisecond keep the order they were scheduled in. Each client is a
//! [`LockMachine`] with its own clock (simulation time scaled by its drift), driven exactly as the
//! tokio client drives it: calls go out through a network model, replies come back, the driver's
//! response timeout turns a missing reply into "outcome unknown", timers fire at the machine's
//! deadlines. The server is a [`SimServer`] (fake-redis's engine) whose clock is set before every
//! command. Nothing here reads a wall clock, spawns a thread or iterates a hash map.
//!
//! This file is the event loop: the queue, the clients' clocks, and the driver that feeds each
//! machine its inputs and carries out its outputs. The rest of the world is split by concern:
//! `network` decides what happens to every message and carries out the scheduled faults,
//! `workload` is what each client does with its lock, `fair` what differs on a fair lock,
//! `read_write` what differs on a read-write lock, `observe` records what the checkers read and writes the trace, and `foreign` drives another
//! library's lock beside ours.

mod fair;
mod foreign;
mod network;
mod observe;
mod queue;
mod read_write;
mod workload;

pub use crate::history::{
    Delivery, ForeignMessage, ForeignRun, ForeignSpec, Mark, Message, QueueSnapshot, Run,
};
pub use crate::server::EPOCH_MS;
pub use foreign::{EXTEND_SCRIPT, RELEASE_SCRIPT, RELEASE_SHA};
pub use observe::describe;

use crate::case::Case;
use crate::checkers::UnlockedHolds;
use crate::history::History;
use crate::server::{ConnId, SimServer};
use bytes::Bytes;
use fake_redis::NodeId;
use fake_redis::seed::Seed;
use lock_core::machine::{Call, CallId, Input, LockMachine, LockName, Output, SeededIds};
use lock_core::script::ReplicaAcks;
use lock_core::{BackendError, FairKeys, LockConfig, Millis, MonoTime, PubSubEvent, Reply};
use network::Network;
use observe::OpenGrant;
use queue::Queue;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use workload::{Holding, Phase};

/// What each random draw of a run is for. A draw is a pure function of (seed, stream, client,
/// sequence number), [`Seed::blend`]: none depends on how many draws came before it in other
/// streams or for other clients, so shrinking a case (removing a client, a fault, a message) does
/// not shift every later draw, and a case replays exactly.
mod stream {
    /// One-way latency of a message.
    pub(super) const LATENCY: u64 = 1;
    /// Whether a message is lost.
    pub(super) const LOSS: u64 = 2;
    /// A client's work duration.
    pub(super) const WORK: u64 = 3;
    /// A client's request and owner ids.
    pub(super) const IDS: u64 = 4;
}

/// The server's clock at simulation time `t` (before any clock jump), as fault plans read it.
fn server_time(t: u64) -> i64 {
    EPOCH_MS.saturating_add(i64::try_from(t).unwrap_or(i64::MAX))
}

/// The node fault plans know client `client` by.
fn node(client: usize) -> NodeId {
    NodeId(client as u64)
}

/// `key`'s bit in [`World`]'s `lock_index_lens`.
fn len_bit(key: &[u8]) -> u64 {
    1 << key.len().min(63)
}

/// The name of lock `n`.
pub fn lock_name(n: u32) -> String {
    format!("L{n}")
}

#[derive(Clone, Debug)]
enum Ev {
    /// The client's workload takes its next step.
    Step { client: usize },
    /// The machine's timer, if it is still the current one.
    Timer { client: usize, generation: u64 },
    /// A call reaches the server.
    Arrive {
        client: usize,
        id: CallId,
        call: Call,
    },
    /// A reply reaches the client (with the replicas' count of its `WAIT`, if it sent one).
    Reply {
        client: usize,
        id: CallId,
        result: Result<Reply, BackendError>,
        acks: Option<ReplicaAcks>,
    },
    /// The server looks again at a call's blocked `WAIT` (its script already ran), if it still
    /// blocks (`World::waits`).
    WaitPoll { ticket: u64 },
    /// The driver's response timeout for a call.
    CallTimeout { client: usize, id: CallId },
    /// A subscribe or unsubscribe reaches the server.
    SubArrive {
        client: usize,
        channel: Bytes,
        subscribe: bool,
    },
    /// The subscription is in place, as the client learns.
    Subscribed { client: usize, channel: Bytes },
    /// A published message reaches a client.
    Message {
        client: usize,
        channel: Bytes,
        payload: Bytes,
        /// When the server published it.
        sent: u64,
    },
    /// A scheduled fault.
    Fault { index: usize },
    /// A paused client runs again.
    Resume { client: usize },
    /// Something happens to a foreign client (it holds its own events while paused).
    Foreign {
        client: usize,
        ev: foreign::ForeignEv,
    },
}

impl Ev {
    fn client(&self) -> Option<usize> {
        match *self {
            Ev::Step { client }
            | Ev::Timer { client, .. }
            | Ev::Reply { client, .. }
            | Ev::CallTimeout { client, .. }
            | Ev::Subscribed { client, .. }
            | Ev::Message { client, .. } => Some(client),
            // Arrivals are at the server: a paused client's requests already left.
            Ev::Arrive { .. }
            | Ev::WaitPoll { .. }
            | Ev::SubArrive { .. }
            | Ev::Fault { .. }
            | Ev::Resume { .. }
            | Ev::Foreign { .. } => None,
        }
    }
}

struct SimClient {
    machine: LockMachine,
    conn: ConnId,
    sub_conn: ConnId,
    paused_until: Option<u64>,
    crashed: bool,
    timer_generation: u64,
    timer_at: Option<u64>,
    inflight: BTreeSet<CallId>,
    next_op: u64,
    phase: Phase,
    cycles_done: u32,
    holding: Option<Holding>,
    work_seq: u64,
    /// The holds whose last unlock was sent, for checker (d).
    unlocked: UnlockedHolds,
    /// The unlock channels the machine asked to be subscribed to.
    channels: BTreeSet<Bytes>,
    /// On a fair lock, the owner whose place the current acquire waits for, until it ends.
    waiting_as: Option<Bytes>,
}

/// A world running one case.
pub struct World<S: SimServer> {
    case: Case,
    server: S,
    now: u64,
    seq: u64,
    queue: Queue<Ev>,
    clients: Vec<SimClient>,
    network: Network,
    conn_owner: BTreeMap<ConnId, usize>,
    fenced_max: BTreeMap<u32, u64>,
    /// Per lock, the clients whose critical section is open (for the unfenced resource).
    sections: BTreeMap<u32, BTreeSet<usize>>,
    grants: BTreeMap<u32, Vec<OpenGrant>>,
    history: History,
    trace: Vec<String>,
    marks: Vec<Mark>,
    messages: Vec<Message>,
    /// (client, call) → its entry in `messages`.
    message_of: BTreeMap<(usize, CallId), usize>,
    deliveries: Vec<Delivery>,
    /// The fair locks' queues each time they changed (not written by a world `without_trace`).
    queues: Vec<QueueSnapshot>,
    events: u64,
    /// (lock, token) → the owner it was granted to, to tell a replayed grant from a new one.
    granted_tokens: BTreeMap<(u32, u64), Bytes>,
    /// Lock key → lock number, for the locks the case uses.
    lock_index: BTreeMap<Bytes, u32>,
    /// The lengths of `lock_index`'s keys, bit `n` for `n` bytes (bit 63 for 63 or more): every
    /// call's keys are looked up there after it runs, and most of them (latches, channels,
    /// counters) are longer than any lock's name, so a key of another length is not looked up.
    lock_index_lens: u64,
    /// Lock number → its key, for the locks the case uses: the observers read a lock after
    /// every call that touched it, and formatting its name each time was most of the reading.
    lock_keys: BTreeMap<u32, Bytes>,
    /// Lock number → its name, shared: every request names its lock, and a clone is a count.
    lock_names: BTreeMap<u32, LockName>,
    /// Each client's name, shared: the trace's actor, taken on every event whether or not a
    /// trace is written.
    names: Vec<Arc<str>>,
    /// Whether to write the trace and marks (off for throughput measurements).
    tracing: bool,
    /// The foreign clients, if any.
    foreign: foreign::Foreign,
    /// The fair locks' keys, by lock number.
    fair_keys: BTreeMap<u32, FairKeys>,
    /// The fair locks' queues as last read, for checker (g).
    fair_queues: BTreeMap<u32, fair::FairQueue>,
    /// How many places have joined any fair lock's queue: each new one's rank.
    fair_arrivals: u64,
    /// Failover facts, for a case with replicas (`observe.rs`): the grants a promotion lost.
    lost_grants: Vec<observe::LostGrant>,
    /// Each acquire a machine reported, (lock, owner, time), for a case with replicas.
    confirmed: Vec<(u32, Bytes, u64)>,
    /// Each server grant's start, (lock, owner, time), for a case with replicas.
    grant_starts: Vec<(u32, Bytes, u64)>,
    /// The synced calls whose `WAIT` blocks, by ticket: (client, call id, call, script reply).
    waits: BTreeMap<u64, (usize, CallId, Call, Reply)>,
}

impl<S: SimServer> World<S> {
    /// A world for `case` on `server`, with every client's machine built and nothing run yet.
    pub fn new(case: &Case, mut server: S) -> World<S> {
        let mut config = LockConfig {
            watchdog_timeout: Millis(case.watchdog),
            drift_rate: case.margin_ppm as f64 / 1e6,
            ..LockConfig::default()
        };
        if case.replicas > 0 && !case.sync {
            config.sync_replicas = None;
        }
        let mut clients = Vec::new();
        let mut conn_owner = BTreeMap::new();
        for i in 0..case.clients.len() {
            let ids = SeededIds::new(Seed(case.seed).blend(stream::IDS, i as u64, 0));
            let machine = LockMachine::new(config.clone(), ids).expect("valid simulation config");
            let conn = server.connect(node(i));
            let sub_conn = server.connect(node(i));
            conn_owner.insert(sub_conn, i);
            clients.push(SimClient {
                machine,
                conn,
                sub_conn,
                paused_until: None,
                crashed: false,
                timer_generation: 0,
                timer_at: None,
                inflight: BTreeSet::new(),
                next_op: 0,
                phase: Phase::NotStarted,
                cycles_done: 0,
                holding: None,
                work_seq: 0,
                unlocked: UnlockedHolds::default(),
                channels: BTreeSet::new(),
                waiting_as: None,
            });
        }
        let fair_keys: BTreeMap<u32, FairKeys> = case
            .fair
            .iter()
            .map(|&lock| (lock, config.key_layout.fair_lock(&lock_name(lock))))
            .collect();
        let lock_keys: BTreeMap<u32, Bytes> = case
            .clients
            .iter()
            .map(|c| (c.lock, Bytes::from(lock_name(c.lock))))
            .collect();
        let lock_names: BTreeMap<u32, LockName> = lock_keys
            .keys()
            .map(|&lock| (lock, LockName::from(lock_name(lock))))
            .collect();
        let mut lock_index: BTreeMap<Bytes, u32> = lock_keys
            .iter()
            .map(|(&lock, key)| (key.clone(), lock))
            .collect();
        // A fair lock's give-up names only its queue and timeouts: they stand for the lock too.
        for (&lock, keys) in &fair_keys {
            lock_index.insert(keys.queue.clone(), lock);
            lock_index.insert(keys.timeouts.clone(), lock);
        }
        let mut world = World {
            case: case.clone(),
            server,
            now: 0,
            seq: 0,
            queue: Queue::default(),
            clients,
            network: Network::new(case),
            conn_owner,
            fenced_max: BTreeMap::new(),
            sections: BTreeMap::new(),
            grants: BTreeMap::new(),
            history: History::default(),
            trace: Vec::new(),
            marks: Vec::new(),
            messages: Vec::new(),
            message_of: BTreeMap::new(),
            deliveries: Vec::new(),
            queues: Vec::new(),
            events: 0,
            lock_index_lens: lock_index.keys().fold(0, |lens, k| lens | len_bit(k)),
            lock_index,
            lock_keys,
            lock_names,
            names: case
                .clients
                .iter()
                .map(|c| Arc::from(c.name.as_str()))
                .collect(),
            tracing: true,
            granted_tokens: BTreeMap::new(),
            foreign: foreign::Foreign::default(),
            fair_keys,
            fair_queues: BTreeMap::new(),
            fair_arrivals: 0,
            lost_grants: Vec::new(),
            confirmed: Vec::new(),
            grant_starts: Vec::new(),
            waits: BTreeMap::new(),
        };
        world.note("sim", || {
            format!(
                "seed={} clients={} faults={} watchdog={} latency={}..{} loss={}‰ up {}‰ down",
                case.seed,
                case.clients.len(),
                case.faults.len(),
                case.watchdog,
                case.latency.0,
                case.latency.1,
                case.loss.0,
                case.loss.1
            )
        });
        for (i, c) in case.clients.iter().enumerate() {
            world.schedule(c.start, Ev::Step { client: i });
        }
        for (index, f) in case.faults.iter().enumerate() {
            world.schedule(f.at(), Ev::Fault { index });
        }
        world
    }

    fn schedule(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(at, self.seq, ev);
    }

    fn name(&self, client: usize) -> Arc<str> {
        self.names[client].clone()
    }

    /// The name of lock `lock`, shared.
    fn shared_name(&self, lock: u32) -> LockName {
        match self.lock_names.get(&lock) {
            Some(name) => name.clone(),
            None => lock_name(lock).into(),
        }
    }

    /// The key of lock `lock`.
    fn lock_key(&self, lock: u32) -> Bytes {
        match self.lock_keys.get(&lock) {
            Some(key) => key.clone(),
            None => Bytes::from(lock_name(lock)),
        }
    }

    /// The client's clock at simulation time `t`.
    fn client_time(&self, client: usize, t: u64) -> MonoTime {
        let drift = self.case.clients[client].drift_ppm;
        // Most clients keep time exactly, and 128-bit division is not free.
        if drift == 0 {
            return MonoTime(t);
        }
        MonoTime((t as i128 + t as i128 * drift as i128 / 1_000_000).max(0) as u64)
    }

    /// The simulation time at which the client's clock reads `m` (the first such millisecond).
    fn sim_time(&self, client: usize, m: MonoTime) -> u64 {
        let drift = self.case.clients[client].drift_ppm as i128;
        if drift == 0 {
            return m.0;
        }
        let num = m.0 as i128 * 1_000_000;
        let den = 1_000_000 + drift;
        ((num + den - 1) / den).max(0) as u64
    }

    /// The server's clock now, before any clock jump: the engine adds its jumps itself.
    fn server_clock(&self) -> i64 {
        server_time(self.now)
    }

    /// Runs without writing the trace or marks: for measuring throughput. The checkers still run.
    pub fn without_trace(mut self) -> World<S> {
        self.tracing = false;
        self
    }

    /// Makes every client's machine break `rule`: for proving that the checkers notice.
    pub fn break_rule(mut self, rule: lock_core::machine::BrokenRule) -> World<S> {
        for c in &mut self.clients {
            c.machine.break_rule(rule);
        }
        self
    }

    /// Runs the case to its horizon and checks the history.
    pub fn run(mut self) -> Run {
        while let Some((at, ev)) = self.queue.pop() {
            if at > self.case.horizon {
                break;
            }
            self.now = at;
            if let Some(client) = ev.client() {
                if self.clients[client].crashed {
                    continue;
                }
                if let Some(until) = self.clients[client].paused_until
                    && self.now < until
                {
                    // A paused client neither acts nor hears: everything waits for the resume.
                    self.schedule(until, ev);
                    continue;
                }
            }
            self.events += 1;
            self.dispatch(ev);
        }
        self.now = self.case.horizon;
        self.finish()
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Step { client } => self.step(client),
            Ev::Timer { client, generation } => {
                if self.clients[client].timer_generation == generation {
                    self.clients[client].timer_at = None;
                    self.feed(client, Input::Timeout);
                }
            }
            Ev::Arrive { client, id, call } => self.arrive(client, id, call),
            Ev::Reply {
                client,
                id,
                result,
                acks,
            } => {
                self.message_answered(client, id);
                if self.clients[client].inflight.remove(&id) {
                    let input = match (result, acks) {
                        (Ok(reply), Some(replicas)) => Input::SyncedCallResult {
                            id,
                            reply,
                            replicas,
                        },
                        (result, _) => Input::CallResult { id, result },
                    };
                    self.feed(client, input);
                }
            }
            Ev::WaitPoll { ticket } => self.wait_poll(ticket, false),
            Ev::CallTimeout { client, id } => {
                if self.clients[client].inflight.remove(&id) {
                    let name = self.name(client);
                    self.mark(&name, "timeout", || {
                        format!("call {}: no reply in time, outcome unknown", id.0)
                    });
                    let result = Err(BackendError::Unknown(
                        "no reply within the response timeout".into(),
                    ));
                    self.feed(client, Input::CallResult { id, result });
                }
            }
            Ev::SubArrive {
                client,
                channel,
                subscribe,
            } => self.subscription_arrives(client, channel, subscribe),
            Ev::Subscribed { client, channel } => self.feed(
                client,
                Input::Subscribed {
                    channel,
                    result: Ok(()),
                },
            ),
            Ev::Message {
                client,
                channel,
                payload,
                sent,
            } => {
                self.delivered(client, sent);
                self.note(&self.name(client), || "hears unlock message".into());
                self.feed(
                    client,
                    Input::PubSub(PubSubEvent::Message { channel, payload }),
                );
            }
            Ev::Fault { index } => self.fault(index),
            Ev::Foreign { client, ev } => self.foreign_event(client, ev),
            Ev::Resume { client } => {
                if !self.clients[client].crashed {
                    self.clients[client].paused_until = None;
                    let name = self.name(client);
                    self.mark(&name, "resume", String::new);
                }
            }
        }
    }

    /// Feeds one input to a client's machine and handles everything it outputs.
    fn feed(&mut self, client: usize, input: Input) {
        let now = self.client_time(client, self.now);
        self.clients[client].machine.handle(input, now);
        self.drain(client);
    }

    fn drain(&mut self, client: usize) {
        while let Some(output) = self.clients[client].machine.poll_output() {
            self.output(client, output);
        }
        let deadline = self.clients[client].machine.poll_timeout();
        let at = deadline.map(|d| self.sim_time(client, d).max(self.now));
        if at != self.clients[client].timer_at {
            let c = &mut self.clients[client];
            c.timer_generation += 1;
            c.timer_at = at;
            let generation = c.timer_generation;
            if let Some(at) = at {
                self.schedule(at, Ev::Timer { client, generation });
            }
        }
    }

    fn output(&mut self, client: usize, output: Output) {
        match output {
            Output::Call { id, call } => self.send_call(client, id, call),
            Output::Subscribe { channel } => self.send_subscription(client, channel, true),
            Output::Unsubscribe { channel } => self.send_subscription(client, channel, false),
            Output::Done { op, result } => self.done(client, op, result),
            Output::Event(event) => self.lock_event(client, event),
        }
    }
}
