//! The simulated world: lock machines, a network, a server, faults, one event queue.
//!
//! Time is simulation milliseconds from 0. Events are ordered by (time, sequence number), so two
//! events at one millisecond keep the order they were scheduled in. Each client is a
//! [`LockMachine`] with its own clock (simulation time scaled by its drift), driven exactly as the
//! tokio client drives it: calls go out through a network model, replies come back, the driver's
//! response timeout turns a missing reply into "outcome unknown", timers fire at the machine's
//! deadlines. The server is a [`SimServer`] (fake-redis's engine) whose clock is set before every
//! command. Nothing here reads a wall clock, spawns a thread or iterates a hash map.

use crate::case::{AcquireKind, Case, Fault};
use crate::history::{Checker, History, Interval, Violation};
use crate::rng::{Stream, draw, draw_range};
use crate::server::{ConnId, LockState, SimServer};
use bytes::Bytes;
use lock_core::machine::{
    AcquireRequest, Acquired, Call, CallId, Done, HoldId, HoldState, Input, LockError, LockEvent,
    LockMachine, OpId, Output, OwnerId, Request, SeededIds, UnlockOutcome, Wait,
};
use lock_core::script::renew_batch;
use lock_core::{BackendError, KeyLayout, Lease, LockConfig, Millis, MonoTime, PubSubEvent, Reply};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

/// The server's unix time at simulation time 0.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

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
    /// A reply reaches the client.
    Reply {
        client: usize,
        id: CallId,
        result: Result<Reply, BackendError>,
    },
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
    },
    /// A scheduled fault.
    Fault { index: usize },
    /// A paused client runs again.
    Resume { client: usize },
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
            Ev::Arrive { .. } | Ev::SubArrive { .. } | Ev::Fault { .. } | Ev::Resume { .. } => None,
        }
    }
}

#[derive(Debug)]
struct Scheduled {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Where a client's workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    NotStarted,
    Acquiring(OpId),
    Reentering(OpId),
    /// Holding; `writes` of the three (start, middle, end) done.
    Working {
        writes: u8,
    },
    ReleasingInner(OpId),
    Releasing(OpId),
    Thinking,
    Finished,
}

struct Holding {
    hold: HoldId,
    owner: OwnerId,
    token: Option<u64>,
    /// The hold the nested re-entry of this cycle was granted, which it must release: the same
    /// hold, or a new one if the outer hold had been lost meanwhile.
    reentered: Option<HoldId>,
    /// Whether a call on this hold ended with its outcome unknown, or its `valid_until` passed:
    /// the server's count may differ from the client's for the rest of the hold, so (f) no longer
    /// applies to it.
    uncertain: bool,
    work: u64,
    /// The client-side interval being built: start and believed end (simulation ms).
    believed_from: u64,
    believed_until: u64,
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
    message_seq: u64,
    work_seq: u64,
    /// (lock key, owner) pairs whose last unlock was sent: no renewal may name them again.
    unlocked: BTreeSet<(Bytes, Bytes)>,
    /// The unlock channels the machine asked to be subscribed to.
    channels: BTreeSet<Bytes>,
}

/// A server-side grant being recorded.
struct OpenGrant {
    owner: Bytes,
    from: u64,
    deadline: Option<u64>,
}

/// The result of a run.
#[derive(Debug)]
pub struct Run {
    /// Every event, one line each: `[  10.001s] a  renew  L0 …`.
    pub trace: Vec<String>,
    /// FNV-1a of the trace: equal runs have equal hashes.
    pub trace_hash: u64,
    /// How many events were processed.
    pub events: u64,
    /// The broken rules.
    pub violations: Vec<Violation>,
    /// The facts the checkers read.
    pub history: History,
    /// Named moments for tests and the examples, in time order.
    pub marks: Vec<Mark>,
    /// Each client's id on the server (the first part of its owners), with the client's name.
    pub client_ids: Vec<(String, String)>,
}

impl Run {
    /// The client name behind an owner string `<client_id>:<owner_id>`.
    pub fn client_of(&self, owner: &str) -> Option<&str> {
        let id = owner.rsplit_once(':').map_or(owner, |(id, _)| id);
        self.client_ids
            .iter()
            .find(|(cid, _)| cid == id)
            .map(|(_, name)| name.as_str())
    }
}

/// A named moment of a run: what an actor (a client's name, or `server`) did or met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Simulation ms.
    pub at: u64,
    /// A client's name, or `server`.
    pub actor: String,
    /// What: acquire, renew, unlock, released, expire, lost, may-be-lost, pause, resume, crash,
    /// write, write-accepted, write-rejected, restart, failover, clock-jump, …
    pub what: String,
    /// The details (lock, TTL, token).
    pub detail: String,
}

impl Run {
    /// The violations of one checker.
    pub fn of(&self, checker: Checker) -> Vec<&Violation> {
        self.violations
            .iter()
            .filter(|v| v.checker == checker)
            .collect()
    }

    /// The first moment `actor` did `what`, if it did.
    pub fn first(&self, actor: &str, what: &str) -> Option<u64> {
        self.marks
            .iter()
            .find(|m| m.actor == actor && m.what == what)
            .map(|m| m.at)
    }

    /// Every moment `actor` did `what`.
    pub fn all(&self, actor: &str, what: &str) -> Vec<u64> {
        self.marks
            .iter()
            .filter(|m| m.actor == actor && m.what == what)
            .map(|m| m.at)
            .collect()
    }

    /// The trace as one text block.
    pub fn timeline(&self) -> String {
        self.trace.join("\n")
    }
}

/// A world running one case.
pub struct World<S: SimServer> {
    case: Case,
    server: S,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<Scheduled>>,
    clients: Vec<SimClient>,
    conn_owner: BTreeMap<ConnId, usize>,
    clock_offset: i64,
    fenced_max: BTreeMap<u32, u64>,
    /// Per lock, the clients whose critical section is open (for the unfenced resource).
    sections: BTreeMap<u32, BTreeSet<usize>>,
    grants: BTreeMap<u32, Vec<OpenGrant>>,
    history: History,
    trace: Vec<String>,
    marks: Vec<Mark>,
    events: u64,
    layout: KeyLayout,
    /// (lock, token) → the owner it was granted to, to tell a replayed grant from a new one.
    granted_tokens: BTreeMap<(u32, u64), Bytes>,
    /// Lock key → lock number, for the locks the case uses.
    lock_index: BTreeMap<Bytes, u32>,
    /// Whether to write the trace and marks (off for throughput measurements).
    tracing: bool,
}

fn stamp(ms: u64) -> String {
    format!("[{:>4}.{:03}s]", ms / 1000, ms % 1000)
}

impl<S: SimServer> World<S> {
    /// A world for `case` on `server`, with every client's machine built and nothing run yet.
    pub fn new(case: &Case, mut server: S) -> World<S> {
        let config = LockConfig {
            watchdog_timeout: Millis(case.watchdog),
            drift_rate: case.margin_ppm as f64 / 1e6,
            ..LockConfig::default()
        };
        let mut clients = Vec::new();
        let mut conn_owner = BTreeMap::new();
        for i in 0..case.clients.len() {
            let ids = SeededIds::new(draw(case.seed, Stream::Ids, i as u64, 0));
            let machine = LockMachine::new(config.clone(), ids).expect("valid simulation config");
            let conn = server.connect();
            let sub_conn = server.connect();
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
                message_seq: 0,
                work_seq: 0,
                unlocked: BTreeSet::new(),
                channels: BTreeSet::new(),
            });
        }
        let mut world = World {
            case: case.clone(),
            server,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            clients,
            conn_owner,
            clock_offset: 0,
            fenced_max: BTreeMap::new(),
            sections: BTreeMap::new(),
            grants: BTreeMap::new(),
            history: History::default(),
            trace: Vec::new(),
            marks: Vec::new(),
            events: 0,
            layout: config.key_layout.clone(),
            lock_index: case
                .clients
                .iter()
                .map(|c| (Bytes::from(lock_name(c.lock)), c.lock))
                .collect(),
            tracing: true,
            granted_tokens: BTreeMap::new(),
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
        self.queue.push(Reverse(Scheduled {
            at,
            seq: self.seq,
            ev,
        }));
    }

    fn name(&self, client: usize) -> String {
        self.case.clients[client].name.clone()
    }

    fn note(&mut self, actor: &str, what: impl FnOnce() -> String) {
        if self.tracing {
            let what = what();
            self.trace
                .push(format!("{} {:<6} {}", stamp(self.now), actor, what));
        }
    }

    fn mark(&mut self, actor: &str, what: &str, detail: impl FnOnce() -> String) {
        if !self.tracing {
            return;
        }
        let detail = detail();
        self.note(actor, || format!("{what} {detail}"));
        self.marks.push(Mark {
            at: self.now,
            actor: actor.to_owned(),
            what: what.to_owned(),
            detail,
        });
    }

    /// The client's clock at simulation time `t`.
    fn client_time(&self, client: usize, t: u64) -> MonoTime {
        let drift = self.case.clients[client].drift_ppm;
        MonoTime((t as i128 + t as i128 * drift as i128 / 1_000_000).max(0) as u64)
    }

    /// The simulation time at which the client's clock reads `m` (the first such millisecond).
    fn sim_time(&self, client: usize, m: MonoTime) -> u64 {
        let drift = self.case.clients[client].drift_ppm as i128;
        let num = m.0 as i128 * 1_000_000;
        let den = 1_000_000 + drift;
        ((num + den - 1) / den).max(0) as u64
    }

    fn server_now(&self) -> i64 {
        EPOCH_MS + self.now as i64 + self.clock_offset
    }

    /// A message's one-way latency, and whether it is lost (`up`: client to server).
    fn latency(&mut self, client: usize, up: bool) -> (u64, bool) {
        let c = &mut self.clients[client];
        c.message_seq += 1;
        let seq = c.message_seq;
        let (lo, hi) = self.case.latency;
        let latency = draw_range(self.case.seed, Stream::Latency, client as u64, seq, lo, hi);
        let loss = if up {
            self.case.loss.0
        } else {
            self.case.loss.1
        };
        let lost = loss > 0
            && draw(self.case.seed, Stream::Loss, client as u64, seq) % 1000 < u64::from(loss);
        (latency, lost)
    }

    /// The faults on `client`'s messages whose window is open now.
    fn open_windows(&self, client: usize) -> impl Iterator<Item = &Fault> {
        let now = self.now;
        self.case.faults.iter().filter(move |f| {
            f.window()
                .is_some_and(|(c, window)| c == client && window.contains(&now))
        })
    }

    /// The extra delay the fault windows open now give a message of `client` (`up`: a request).
    fn window_delay(&self, client: usize, up: bool) -> u64 {
        self.open_windows(client)
            .map(|f| match (f, up) {
                (Fault::DelayRequests { by, .. }, true)
                | (Fault::DelayReplies { by, .. }, false) => *by,
                _ => 0,
            })
            .sum()
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
        while let Some(Reverse(next)) = self.queue.pop() {
            if next.at > self.case.horizon {
                break;
            }
            self.now = next.at;
            if let Some(client) = next.ev.client() {
                if self.clients[client].crashed {
                    continue;
                }
                if let Some(until) = self.clients[client].paused_until
                    && self.now < until
                {
                    // A paused client neither acts nor hears: everything waits for the resume.
                    self.schedule(until, next.ev);
                    continue;
                }
            }
            self.events += 1;
            self.dispatch(next.ev);
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
            Ev::Reply { client, id, result } => {
                if self.clients[client].inflight.remove(&id) {
                    self.feed(client, Input::CallResult { id, result });
                }
            }
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
            } => {
                if self.clients[client].crashed {
                    return;
                }
                let conn = self.clients[client].sub_conn;
                let now = self.server_now();
                if subscribe {
                    self.server.subscribe(conn, &channel, now);
                    let (latency, _) = self.latency(client, false);
                    self.schedule(self.now + latency, Ev::Subscribed { client, channel });
                } else {
                    self.server.unsubscribe(conn, &channel, now);
                }
            }
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
            } => {
                self.note(&self.name(client), || "hears unlock message".into());
                self.feed(
                    client,
                    Input::PubSub(PubSubEvent::Message { channel, payload }),
                );
            }
            Ev::Fault { index } => self.fault(index),
            Ev::Resume { client } => {
                if !self.clients[client].crashed {
                    self.clients[client].paused_until = None;
                    let name = self.name(client);
                    self.mark(&name, "resume", String::new);
                }
            }
        }
    }

    fn fault(&mut self, index: usize) {
        let fault = self.case.faults[index].clone();
        match fault {
            Fault::Pause { client, for_ms, .. } => {
                if self.clients[client].crashed {
                    return;
                }
                let until = self.now + for_ms;
                self.clients[client].paused_until = Some(until);
                let name = self.name(client);
                self.mark(&name, "pause", || format!("for {for_ms} ms"));
                self.schedule(until, Ev::Resume { client });
            }
            Fault::Crash { client, .. } => {
                let name = self.name(client);
                let c = &mut self.clients[client];
                if c.crashed {
                    return;
                }
                c.crashed = true;
                c.phase = Phase::Finished;
                let (conn, sub) = (c.conn, c.sub_conn);
                self.server.disconnect(conn);
                self.server.disconnect(sub);
                self.close_section(client);
                self.mark(&name, "crash", String::new);
            }
            Fault::Restart { .. } => {
                let now = self.server_now();
                self.server.restart(now);
                self.data_lost("restart", || {
                    "(no persistence: data and scripts lost)".into()
                });
            }
            Fault::Failover { lag, .. } => {
                let now = self.server_now();
                self.server.failover(lag as i64, now);
                self.data_lost("failover", || format!("(replica lagging {lag} ms)"));
            }
            Fault::ClockJump { by, .. } => {
                self.clock_offset += by;
                self.mark("server", "clock-jump", || format!("{by:+} ms"));
                self.observe_all();
            }
            // Windows: consulted when messages are sent.
            Fault::DropRequests { .. }
            | Fault::DropReplies { .. }
            | Fault::DelayRequests { .. }
            | Fault::DelayReplies { .. }
            | Fault::DropPubSub { .. } => {}
        }
    }

    /// The server has just lost its data and connections (`what`: the fault): the history
    /// records it, clients connect again, and every lock's grants are brought up to date.
    fn data_lost(&mut self, what: &str, detail: impl FnOnce() -> String) {
        self.history.data_loss.push(self.now);
        self.mark("server", what, detail);
        self.resubscribe_all();
        self.observe_all();
    }

    /// After the server lost its connections, subscribers connect again: the machine is told the
    /// subscription was lost and restored (every waiter retries).
    fn resubscribe_all(&mut self) {
        for client in 0..self.clients.len() {
            if self.clients[client].crashed {
                continue;
            }
            self.feed(client, Input::PubSub(PubSubEvent::SubscriptionLost));
            let old = self.clients[client].sub_conn;
            self.conn_owner.remove(&old);
            let conn = self.server.connect();
            let cmd = self.server.connect();
            self.clients[client].sub_conn = conn;
            self.clients[client].conn = cmd;
            self.conn_owner.insert(conn, client);
            let now = self.server_now();
            for channel in self.clients[client].channels.clone() {
                self.server.subscribe(conn, &channel, now);
            }
            self.feed(client, Input::PubSub(PubSubEvent::SubscriptionRestored));
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
        let name = self.name(client);
        match output {
            Output::Call { id, call } => {
                self.check_no_renew_after_unlock(client, &call);
                self.clients[client].inflight.insert(id);
                let (latency, lost) = self.latency(client, true);
                let dropped = lost
                    || self
                        .open_windows(client)
                        .any(|f| matches!(f, Fault::DropRequests { .. }));
                if dropped {
                    self.mark(&name, "dropped", || {
                        format!("request {} lost", short(&call))
                    });
                } else {
                    self.note(&name, || format!("sends {}", describe(&call)));
                    let delay = self.window_delay(client, true);
                    self.schedule(self.now + latency + delay, Ev::Arrive { client, id, call });
                }
                let timeout = self.clients[client].machine.config().response_timeout();
                let at = self.sim_time(client, self.client_time(client, self.now) + timeout);
                self.schedule(at, Ev::CallTimeout { client, id });
            }
            Output::Subscribe { channel } => self.send_subscription(client, channel, true),
            Output::Unsubscribe { channel } => self.send_subscription(client, channel, false),
            Output::Done { op, result } => self.done(client, op, result),
            Output::Event(event) => self.lock_event(client, event),
        }
    }

    /// Remembers which unlock channels the machine wants (for re-subscribing after the server
    /// lost its connections) and sends the subscribe or unsubscribe; it is never lost.
    fn send_subscription(&mut self, client: usize, channel: Bytes, subscribe: bool) {
        let channels = &mut self.clients[client].channels;
        if subscribe {
            channels.insert(channel.clone());
        } else {
            channels.remove(&channel);
        }
        let (latency, _) = self.latency(client, true);
        self.schedule(
            self.now + latency,
            Ev::SubArrive {
                client,
                channel,
                subscribe,
            },
        );
    }

    fn check_no_renew_after_unlock(&mut self, client: usize, call: &Call) {
        let Call::Script(script) = call else { return };
        if script.script.name != renew_batch::SCRIPT.name {
            return;
        }
        for (key, owner) in script.keys.iter().zip(script.args.iter().skip(1)) {
            if self.clients[client]
                .unlocked
                .contains(&(key.clone(), owner.clone()))
            {
                self.history.online.push(Violation {
                    checker: Checker::NoRenewAfterUnlock,
                    at: self.now,
                    message: format!(
                        "client {} sent a renewal of {} for {} after its unlock",
                        self.name(client),
                        String::from_utf8_lossy(key),
                        String::from_utf8_lossy(owner)
                    ),
                });
            }
        }
    }

    fn arrive(&mut self, client: usize, id: CallId, call: Call) {
        if self.clients[client].crashed {
            return;
        }
        let conn = self.clients[client].conn;
        let now = self.server_now();
        let result = self.server.call(conn, &call, now);
        self.observe_call(client, &call, &result);
        let name = self.name(client);
        let (latency, lost) = self.latency(client, false);
        let dropped = lost
            || self
                .open_windows(client)
                .any(|f| matches!(f, Fault::DropReplies { .. }));
        let delay = self.window_delay(client, false);
        self.note("server", || {
            format!(
                "applies {} from {name} -> {}{}",
                describe(&call),
                match &result {
                    Ok(r) => r.to_string(),
                    Err(e) => e.to_string(),
                },
                if dropped { " (reply lost)" } else { "" }
            )
        });
        if dropped {
            self.mark(&name, "dropped", || {
                format!("reply to {} lost", short(&call))
            });
        } else {
            self.schedule(self.now + latency + delay, Ev::Reply { client, id, result });
        }
        self.deliver_messages();
    }

    fn deliver_messages(&mut self) {
        for (conn, channel, payload) in self.server.take_messages() {
            let Some(&client) = self.conn_owner.get(&conn) else {
                continue;
            };
            if self.clients[client].crashed {
                continue;
            }
            let (latency, lost) = self.latency(client, false);
            let dropped = lost
                || self
                    .open_windows(client)
                    .any(|f| matches!(f, Fault::DropPubSub { .. }));
            if !dropped {
                self.schedule(
                    self.now + latency,
                    Ev::Message {
                        client,
                        channel,
                        payload,
                    },
                );
            }
        }
    }

    /// Records what a call did to the locks it touched (checkers (a) and (b)).
    fn observe_call(&mut self, client: usize, call: &Call, result: &Result<Reply, BackendError>) {
        if let (Call::Script(s), Ok(Reply::Array(items))) = (call, result)
            && s.script.name == "acquire_fenced"
            && let [Reply::Int(-1), Reply::Int(token)] = items.as_slice()
        {
            let lock = self.case.clients[client].lock;
            let token = *token as u64;
            // A replayed request returns the token it was granted: not a new grant.
            let replay = self
                .granted_tokens
                .get(&(lock, token))
                .is_some_and(|o| *o == s.args[1]);
            if !replay {
                self.granted_tokens.insert((lock, token), s.args[1].clone());
                let owner = String::from_utf8_lossy(&s.args[1]).into_owned();
                let list = self.history.tokens.entry(lock).or_default();
                list.push((self.now, owner, token));
            }
        }
        let touched: BTreeSet<u32> = match call {
            Call::Script(s) => s
                .keys
                .iter()
                .filter_map(|k| self.lock_index.get(k).copied())
                .collect(),
            Call::Command(argv) => argv
                .iter()
                .skip(1)
                .filter_map(|k| self.lock_index.get(k).copied())
                .collect(),
        };
        self.observe(touched);
    }

    /// Brings the server-side grant intervals up to date with every lock's state now.
    fn observe_all(&mut self) {
        let locks: BTreeSet<u32> = self.lock_index.values().copied().collect();
        self.observe(locks);
    }

    fn observe(&mut self, locks: BTreeSet<u32>) {
        let now = self.server_now();
        for lock in locks {
            let key = Bytes::from(lock_name(lock));
            let state = self.server.lock_state(&key, now).unwrap_or_default();
            self.observe_lock(lock, state);
        }
    }

    fn observe_lock(&mut self, lock: u32, state: LockState) {
        let now = self.now;
        let offset = self.clock_offset;
        let data_lost_now = self.history.data_loss.last() == Some(&now);
        let open = self.grants.entry(lock).or_default();
        let deadline = state
            .deadline
            .map(|d| (d - EPOCH_MS - offset + 1).max(0) as u64);
        let mut closed = Vec::new();
        let mut expired = Vec::new();
        open.retain(|g| {
            if state.owners.iter().any(|(o, _)| *o == g.owner) {
                return true;
            }
            // Gone: deleted or expired now, or lost with the server's data, in which case the
            // grant is taken to last until the deadline it had.
            let to = if data_lost_now {
                g.deadline.unwrap_or(now).max(now)
            } else {
                g.deadline.map_or(now, |d| d.min(now))
            };
            if !data_lost_now && g.deadline.is_some_and(|d| d <= now) {
                expired.push((to, String::from_utf8_lossy(&g.owner).into_owned()));
            }
            closed.push(Interval {
                lock,
                who: String::from_utf8_lossy(&g.owner).into_owned(),
                from: g.from,
                to,
            });
            false
        });
        for (owner, _) in &state.owners {
            match open.iter_mut().find(|g| g.owner == *owner) {
                Some(g) => g.deadline = deadline,
                None => open.push(OpenGrant {
                    owner: owner.clone(),
                    from: now,
                    deadline,
                }),
            }
        }
        self.history.server_grants.extend(closed);
        for (at, owner) in expired {
            self.note("server", || {
                format!("{} of {owner} expired at {}", lock_name(lock), stamp(at))
            });
            if !self.tracing {
                continue;
            }
            self.marks.push(Mark {
                at,
                actor: "server".into(),
                what: "expire".into(),
                detail: format!("{} of {owner}", lock_name(lock)),
            });
        }
    }

    fn lock_event(&mut self, client: usize, event: LockEvent) {
        let name = self.name(client);
        let until = |w: &Self, v: MonoTime| w.sim_time(client, v);
        match &event {
            LockEvent::Acquired {
                hold,
                count,
                valid_until,
            } => {
                // A new grant to this owner may be renewed again, whatever happened to an earlier
                // hold of the same owner.
                let key = Bytes::from(hold.name.clone());
                self.clients[client]
                    .unlocked
                    .remove(&(key, hold.owner.as_bytes().clone()));
                let v = until(self, *valid_until);
                self.mark(&name, "acquire", || {
                    format!("{} count={count} valid_until={}", hold.name, stamp(v))
                });
                self.extend_belief(client, v);
            }
            LockEvent::Renewed { hold, valid_until } => {
                let v = until(self, *valid_until);
                let ttl = self.case.watchdog;
                self.mark(&name, "renew", || {
                    format!("{} ttl={ttl} valid_until={}", hold.name, stamp(v))
                });
                self.extend_belief(client, v);
            }
            LockEvent::ValidUntilChanged { hold, valid_until } => {
                let v = until(self, *valid_until);
                self.note(&name, || {
                    format!("valid_until {} -> {}", hold.name, stamp(v))
                });
                self.extend_belief(client, v);
            }
            LockEvent::StateChanged {
                hold,
                state: HoldState::MayBeLost,
                ..
            } => {
                self.mark(&name, "may-be-lost", || hold.name.clone());
                // The lease may have run out on the server and been granted afresh (to this owner
                // too, by a re-entry): the counts may differ from here on, so (f) stops applying.
                self.doubt_hold(client);
            }
            LockEvent::StateChanged {
                hold,
                state: HoldState::Lost,
                ..
            } => {
                self.mark(&name, "lost", || hold.name.clone());
                self.close_belief(client);
            }
            LockEvent::MaxHoldReached { hold, .. } => {
                self.mark(&name, "max-hold", || hold.name.clone());
            }
            LockEvent::StateChanged {
                hold,
                state: HoldState::Released,
                ..
            } => {
                // The last count was given back: the client no longer believes it holds the lock.
                self.note(&name, || format!("released {}", hold.name));
                self.close_belief(client);
                self.close_section(client);
            }
            // Valid again after a confirmed renewal: the doubt about the counts stays.
            LockEvent::StateChanged { .. } => {}
        }
    }

    /// Marks the current hold, if any, as one whose count the server may see differently: (f) no
    /// longer applies to it.
    fn doubt_hold(&mut self, client: usize) {
        if let Some(h) = self.clients[client].holding.as_mut() {
            h.uncertain = true;
        }
    }

    fn extend_belief(&mut self, client: usize, valid_until: u64) {
        let now = self.now;
        let lock = self.case.clients[client].lock;
        let who = self.name(client);
        let Some(h) = self.clients[client].holding.as_mut() else {
            return;
        };
        if now >= h.believed_until {
            // The belief had lapsed: what was believed is one interval, and a new one starts.
            let closed = Interval {
                lock,
                who,
                from: h.believed_from,
                to: h.believed_until,
            };
            h.believed_from = now;
            h.believed_until = valid_until;
            self.history.client_intervals.push(closed);
        } else {
            h.believed_until = valid_until;
        }
    }

    fn close_belief(&mut self, client: usize) {
        let now = self.now;
        let lock = self.case.clients[client].lock;
        let who = self.name(client);
        if let Some(h) = self.clients[client].holding.as_mut() {
            let to = h.believed_until.min(now);
            self.history.client_intervals.push(Interval {
                lock,
                who,
                from: h.believed_from,
                to,
            });
            h.believed_from = now;
            h.believed_until = now;
        }
    }

    /// Starts an operation: the client waits in `phase` for its outcome, and its machine is
    /// handed the request.
    fn start_op(&mut self, client: usize, phase: fn(OpId) -> Phase, request: Request) {
        let c = &mut self.clients[client];
        c.next_op += 1;
        let op = OpId(c.next_op);
        c.phase = phase(op);
        self.feed(client, Input::Request { op, request });
    }

    fn acquire_request(&self, client: usize, owner: Option<OwnerId>) -> AcquireRequest {
        let spec = &self.case.clients[client];
        let (lease, wait) = match spec.acquire {
            AcquireKind::Watchdog => (None, Wait::Forever),
            AcquireKind::Lease(ms) => (Some(ms), Wait::Forever),
            AcquireKind::Try { wait, lease } => (lease, Wait::Budget(Millis(wait))),
        };
        AcquireRequest {
            name: lock_name(spec.lock),
            owner,
            lease: lease.map(|ms| Lease::from_millis(ms.max(1)).expect("lease ≥ 1 ms")),
            // A re-entry does not wait: if the owner no longer holds the lock (its lease ran out),
            // it is told at once.
            wait: if owner.is_some() {
                Wait::Budget(Millis::ZERO)
            } else {
                wait
            },
            fenced: spec.fenced,
        }
    }

    /// The workload: acquire, write (start), re-enter, work, write (middle), release inner
    /// holds, work, write (end), release.
    fn step(&mut self, client: usize) {
        let phase = self.clients[client].phase;
        match phase {
            Phase::NotStarted | Phase::Thinking => {
                let request = self.acquire_request(client, None);
                let name = self.name(client);
                self.mark(&name, "wait", || request.name.clone());
                self.start_op(client, Phase::Acquiring, Request::Acquire(request));
            }
            Phase::Working { writes } => {
                self.write(client);
                let writes = writes + 1;
                let reentered = self.clients[client]
                    .holding
                    .as_ref()
                    .is_some_and(|h| h.reentered.is_some());
                if writes == 2 && reentered {
                    self.release_inner(client);
                } else if writes == 3 {
                    self.release(client);
                } else {
                    self.work_half(client, writes);
                }
            }
            _ => {}
        }
    }

    /// Works on for half of this cycle's work time with `writes` of the three writes done, then
    /// takes the next step.
    fn work_half(&mut self, client: usize, writes: u8) {
        self.clients[client].phase = Phase::Working { writes };
        let half = self.clients[client]
            .holding
            .as_ref()
            .map_or(0, |h| h.work / 2);
        self.schedule(self.now + half, Ev::Step { client });
    }

    fn release_inner(&mut self, client: usize) {
        let Some(h) = self.clients[client].holding.as_ref() else {
            return;
        };
        let (hold, owner) = (h.reentered.unwrap_or(h.hold), h.owner);
        let name = lock_name(self.case.clients[client].lock);
        let who = self.name(client);
        self.mark(&who, "unlock", || format!("{name} (the inner hold)"));
        self.start_op(
            client,
            Phase::ReleasingInner,
            Request::Release { hold, name, owner },
        );
    }

    fn release(&mut self, client: usize) {
        let Some(h) = self.clients[client].holding.as_ref() else {
            return;
        };
        let (hold, owner) = (h.hold, h.owner);
        let lock = self.case.clients[client].lock;
        let name = lock_name(lock);
        let keys = self.layout.lock(&name);
        let owner_name = self.clients[client].machine.owner(owner);
        self.clients[client]
            .unlocked
            .insert((keys.lock.clone(), owner_name.as_bytes().clone()));
        self.close_belief(client);
        self.close_section(client);
        let who = self.name(client);
        self.mark(&who, "unlock", || name.clone());
        self.start_op(
            client,
            Phase::Releasing,
            Request::Release { hold, name, owner },
        );
    }

    fn close_section(&mut self, client: usize) {
        let lock = self.case.clients[client].lock;
        if let Some(s) = self.sections.get_mut(&lock) {
            s.remove(&client);
        }
    }

    fn write(&mut self, client: usize) {
        let spec = &self.case.clients[client];
        let lock = spec.lock;
        let fenced = spec.fenced;
        let name = self.name(client);
        let others: Vec<usize> = self
            .sections
            .get(&lock)
            .map(|s| s.iter().copied().filter(|&c| c != client).collect())
            .unwrap_or_default();
        for other in others {
            let other = self.name(other);
            self.history
                .unfenced_overlaps
                .push((self.now, lock, name.clone(), other));
        }
        self.mark(&name, "write", || format!("unfenced L{lock}"));
        self.check_quiescent_counts(client);
        let token = self.clients[client].holding.as_ref().and_then(|h| h.token);
        if let (true, Some(token)) = (fenced, token) {
            let max = self.fenced_max.entry(lock).or_default();
            let accepted = token >= *max;
            if accepted {
                *max = token;
            }
            self.history
                .fenced_writes
                .push((self.now, lock, name.clone(), token, accepted));
            let what = if accepted {
                "write-accepted"
            } else {
                "write-rejected"
            };
            self.mark(&name, what, || format!("fenced L{lock} token={token}"));
        }
    }

    fn done(&mut self, client: usize, op: OpId, result: Result<Done, LockError>) {
        let name = self.name(client);
        let lock = lock_name(self.case.clients[client].lock);
        let phase = self.clients[client].phase;
        match (phase, result) {
            (Phase::Acquiring(p), Ok(Done::Acquired(a))) if p == op => self.begin_hold(client, a),
            (Phase::Reentering(p), result) if p == op => {
                if let Ok(Done::Acquired(a)) = &result {
                    if let Some(h) = self.clients[client].holding.as_mut() {
                        h.token = a.token.or(h.token);
                        h.reentered = Some(a.hold);
                    }
                } else {
                    self.note(&name, || format!("re-entry failed: {result:?}"));
                    self.doubt_hold(client);
                }
                self.work_half(client, 1);
            }
            (Phase::ReleasingInner(p), result) if p == op => {
                match &result {
                    Ok(Done::Unlocked(outcome @ UnlockOutcome::StillHeld)) => {
                        self.mark(&name, "released", || released(&lock, outcome));
                    }
                    Ok(other) => self.note(&name, || format!("inner release: {other:?}")),
                    Err(e) => self.mark(&name, "unlock-failed", || e.to_string()),
                }
                if result.is_err() {
                    self.doubt_hold(client);
                }
                self.work_half(client, 2);
            }
            (Phase::Acquiring(p), result) if p == op => {
                self.mark(&name, "not-acquired", || match &result {
                    Ok(_) => format!("{lock}: the wait budget ran out"),
                    Err(e) => e.to_string(),
                });
                self.next_cycle(client);
            }
            (Phase::Releasing(p), result) if p == op => {
                match &result {
                    Ok(Done::Unlocked(outcome)) => {
                        self.mark(&name, "released", || released(&lock, outcome));
                        // A definite outcome: the owner's count is settled on both sides.
                        self.check_quiescent_counts(client);
                    }
                    Err(e) => self.mark(&name, "unlock-failed", || e.to_string()),
                    Ok(other) => self.mark(&name, "unlock-failed", || format!("{other:?}")),
                }
                self.clients[client].holding = None;
                self.next_cycle(client);
            }
            (_, result) => self.note(&name, || format!("op {} done: {result:?}", op.0)),
        }
    }

    /// The lock is granted: the hold starts, the first write is made, and the client re-enters
    /// or goes to work.
    fn begin_hold(&mut self, client: usize, a: Acquired) {
        let name = self.name(client);
        let spec = &self.case.clients[client];
        let (lock, work_range, reentry) = (spec.lock, spec.work, spec.reentry);
        self.clients[client].work_seq += 1;
        let work = draw_range(
            self.case.seed,
            Stream::Work,
            client as u64,
            self.clients[client].work_seq,
            work_range.0,
            work_range.1,
        );
        let until = self.sim_time(client, a.valid_until);
        self.clients[client].holding = Some(Holding {
            hold: a.hold,
            owner: a.owner,
            token: a.token,
            reentered: None,
            // Granted by a reply that came after its lease could have run out.
            uncertain: until <= self.now,
            work,
            believed_from: self.now,
            believed_until: until,
        });
        self.sections.entry(lock).or_default().insert(client);
        self.note(&name, || {
            format!("holds L{lock} token={:?} work={work}", a.token)
        });
        self.write(client);
        if reentry > 0 {
            let request = self.acquire_request(client, Some(a.owner));
            self.start_op(client, Phase::Reentering, Request::Acquire(request));
        } else {
            self.work_half(client, 1);
        }
    }

    fn next_cycle(&mut self, client: usize) {
        let spec = &self.case.clients[client];
        let (cycles, think) = (spec.cycles, spec.think);
        let c = &mut self.clients[client];
        c.cycles_done += 1;
        if cycles != 0 && c.cycles_done >= cycles {
            c.phase = Phase::Finished;
            return;
        }
        c.phase = Phase::Thinking;
        // At least 50 ms between cycles, so a client whose try_lock keeps failing does not spin.
        self.schedule(self.now + think.max(50), Ev::Step { client });
    }

    /// (f): when the client has nothing in flight, no outcome unknown and a `valid_until` not yet
    /// passed, its count for the hold equals the server's.
    fn check_quiescent_counts(&mut self, client: usize) {
        let now = self.now;
        let c = &self.clients[client];
        if !c.inflight.is_empty() || c.machine.ops_in_progress() > 0 {
            return;
        }
        let Some(h) = c.holding.as_ref() else { return };
        if h.believed_until <= now || h.uncertain {
            return;
        }
        let lock = self.case.clients[client].lock;
        let name = lock_name(lock);
        let owner = c.machine.owner(h.owner);
        let client_count = c
            .machine
            .hold(&name, h.owner)
            .map_or(0, |s| i64::from(s.count));
        let server_now = self.server_now();
        let server_count = self
            .server
            .lock_state(&Bytes::from(name.clone()), server_now)
            .and_then(|s| s.owners.into_iter().find(|(o, _)| o == owner.as_bytes()))
            .map_or(0, |(_, n)| n);
        if client_count != server_count {
            self.history.online.push(Violation {
                checker: Checker::HoldCounts,
                at: self.now,
                message: format!(
                    "client {} counts {client_count} holds of {name}, the server {server_count}",
                    self.name(client)
                ),
            });
        }
    }

    fn finish(mut self) -> Run {
        // Keys that expired after the last call that touched them are seen now.
        self.observe_all();
        for client in 0..self.clients.len() {
            if self.clients[client].holding.is_some() {
                self.close_belief(client);
            }
        }
        let horizon = self.case.horizon;
        for (lock, open) in std::mem::take(&mut self.grants) {
            for g in open {
                self.history.server_grants.push(Interval {
                    lock,
                    who: String::from_utf8_lossy(&g.owner).into_owned(),
                    from: g.from,
                    to: g.deadline.unwrap_or(horizon).min(horizon),
                });
            }
        }
        let violations = self.history.check();
        self.marks.sort_by_key(|m| m.at);
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for line in &self.trace {
            for b in line.bytes().chain(std::iter::once(b'\n')) {
                hash ^= u64::from(b);
                hash = hash.wrapping_mul(0x100_0000_01b3);
            }
        }
        let client_ids = self
            .clients
            .iter()
            .zip(&self.case.clients)
            .map(|(c, spec)| (c.machine.client_id().to_owned(), spec.name.clone()))
            .collect();
        Run {
            client_ids,
            trace: self.trace,
            trace_hash: hash,
            events: self.events,
            violations,
            history: self.history,
            marks: self.marks,
        }
    }
}

/// What an unlock of `lock` did, as the `released` mark says it.
fn released(lock: &str, outcome: &UnlockOutcome) -> String {
    match outcome {
        UnlockOutcome::Released => format!("{lock}: the key is deleted and waiters are told"),
        UnlockOutcome::StillHeld => format!("{lock}: one hold given back, still held"),
    }
}

/// A call as the marks name it: the script and its lock, or the command.
fn short(call: &Call) -> String {
    match call {
        Call::Script(s) => format!(
            "{}({})",
            s.script.name,
            s.keys
                .first()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .unwrap_or_default()
        ),
        Call::Command(_) => describe(call),
    }
}

fn describe(call: &Call) -> String {
    match call {
        Call::Script(s) => {
            let keys: Vec<String> = s
                .keys
                .iter()
                .take(3)
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            format!("{}({})", s.script.name, keys.join(","))
        }
        Call::Command(argv) => argv
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    }
}
