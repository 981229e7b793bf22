//! The network between the clients and the server, and the faults: every decision about what
//! goes wrong in a run is made or handed on in this file.
//!
//! The case's faults become fake-redis's faults once, when the run starts, and the network is a
//! front door over them, like fake-redis's in-process link: before each message leaves it asks a
//! [`FaultPlan`] what becomes of it, and only carries the answer out. A request is judged as it
//! leaves its client, a reply or a pub/sub message as it leaves the server. fake-redis judges a
//! command once, for its request and its reply together, when it is sent; here each direction is
//! judged when its own message leaves, as on a wire (a drop-replies window that opens while a
//! request is in flight catches its reply), so each direction has a plan of its own.
//!
//! What fake-redis has no word for stays here. Every message's one-way latency and its random
//! loss (`loss=`, per mille per direction) are drawn from (seed, stream, client, the client's
//! message count): fake-redis's `CHANCE` draws by another formula from another count, and stored
//! cases replay only with these draws. Overlapping delay windows add up, where a plan takes the
//! first fault that matches. Subscribe and unsubscribe requests and their acknowledgements take a
//! latency but are never lost; a subscriber loses its subscriptions only with the server's
//! connections.
//!
//! The scheduled faults are carried out here too, so the fault model is this one file. A crash, a
//! restart, a failover and a clock jump mean what fake-redis's faults of those names mean, and the
//! server carries each out as the engine does, at its event. A pause stays the world's own: it
//! stops the client's whole process (its timers and steps, not only what it sends), which the
//! event loop does by holding the client's events; and a pause that begins during another ends
//! the freeze at the first of their ends, where fake-redis's pauses chain to the last. Stored cases
//! replay by that meaning.

use super::observe::{describe, short};
use super::workload::Phase;
use super::{EPOCH_MS, Ev, World, lock_name, node, server_time, stream};
use crate::case::{Case, Fault};
use crate::server::{SimServer, Synced};
use bytes::Bytes;
use fake_redis::seed::Seed;
use fake_redis::{Admission, CommandFate, DeliveryFate, FaultPlan, Trigger};
use lock_core::PubSubEvent;
use lock_core::machine::{Call, CallId, Input};
use lock_core::script::ReplicaAcks;
use std::collections::{BTreeMap, BTreeSet};

/// Which way a message goes, and so which loss rate and which plan apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Leg {
    /// A call, client to server.
    Request,
    /// A call's reply, server to client.
    Reply,
    /// A published message, server to a subscriber.
    Message,
}

impl Leg {
    fn up(self) -> bool {
        self == Leg::Request
    }
}

/// The message model: latency and random loss, and the fault plans that judge each message.
pub(super) struct Network {
    seed: Seed,
    latency: (u64, u64),
    /// Per mille, (up, down).
    loss: (u32, u32),
    /// The faults on requests, asked as each leaves its client.
    up: FaultPlan,
    /// The faults on replies and published messages, asked as each leaves the server.
    down: FaultPlan,
    /// Per client, how many messages it has sent or been sent: each message's draws are keyed by
    /// this count, so one client's traffic never shifts another's.
    messages: Vec<u64>,
    /// Per fault of the case, the engine's fault it is if the server carries it out.
    server_faults: Vec<Option<fake_redis::Fault>>,
    /// How many replicas each original primary has: a promotion needs one of them.
    replicas: u16,
    /// How many shards may fail over (one without a cluster).
    shards: u16,
    /// When each shard's replica was promoted (once: the new primary has no replica).
    pub(super) promoted: BTreeMap<u16, u64>,
    /// The partitions: (node, from, to, the clients cut off from it), simulation ms.
    partitions: Vec<(usize, u64, u64, Vec<usize>)>,
    /// Whether the world is reading the locks just after the promotion: what is missing then was
    /// lost by it (a key deleted by a later call of the same millisecond was not).
    pub(super) promoting: bool,
}

impl Network {
    /// The network of `case`, its message faults turned into the two plans.
    pub(super) fn new(case: &Case) -> Network {
        let mut up = FaultPlan::new(case.seed);
        let mut down = FaultPlan::new(case.seed);
        let (mut request_delays, mut reply_delays) = (Vec::new(), Vec::new());
        // Drops go in first: a plan's first matching fault wins, and a message a drop window
        // catches is lost whatever delay is open too.
        for fault in &case.faults {
            match *fault {
                Fault::DropRequests { client, from, to } => {
                    up.add(on_messages(client, CommandFate::DropRequest, from, to));
                }
                Fault::DropReplies { client, from, to } => {
                    down.add(on_messages(client, CommandFate::DropReply, from, to));
                }
                Fault::DropPubSub { client, from, to } => {
                    down.add(fake_redis::Fault::DropDelivery {
                        node: Some(node(client)),
                        trigger: during(from, to),
                    });
                }
                Fault::DelayRequests {
                    client,
                    from,
                    to,
                    by,
                } => request_delays.push(Window {
                    client,
                    from,
                    to,
                    by,
                }),
                Fault::DelayReplies {
                    client,
                    from,
                    to,
                    by,
                } => reply_delays.push(Window {
                    client,
                    from,
                    to,
                    by,
                }),
                _ => {}
            }
        }
        add_delays(&mut up, &request_delays, CommandFate::DelayRequest);
        add_delays(&mut down, &reply_delays, CommandFate::DelayReply);
        Network {
            seed: Seed(case.seed),
            latency: case.latency,
            loss: case.loss,
            up,
            down,
            messages: vec![0; case.clients.len()],
            server_faults: case.faults.iter().map(server_fault).collect(),
            replicas: case.replicas,
            shards: case.shards.max(1),
            promoted: BTreeMap::new(),
            partitions: case
                .faults
                .iter()
                .filter_map(|f| match f {
                    Fault::Partition {
                        node,
                        at,
                        for_ms,
                        clients,
                    } => Some((usize::from(*node), *at, at + for_ms, clients.clone())),
                    _ => None,
                })
                .collect(),
            promoting: false,
        }
    }

    /// A message's one-way latency, and whether it is lost at random (`up`: client to server).
    fn draw(&mut self, client: usize, up: bool) -> (u64, bool) {
        let count = &mut self.messages[client];
        *count += 1;
        let seq = *count;
        let (lo, hi) = self.latency;
        let latency = self
            .seed
            .blend_range(stream::LATENCY, client as u64, seq, lo, hi);
        let loss = if up { self.loss.0 } else { self.loss.1 };
        let lost =
            loss > 0 && self.seed.blend(stream::LOSS, client as u64, seq) % 1000 < u64::from(loss);
        (latency, lost)
    }

    /// How long a message of `client` on `leg`, leaving at `now`, takes to arrive; `None` if it
    /// is lost.
    pub(super) fn send(&mut self, client: usize, leg: Leg, now: u64) -> Option<u64> {
        let (latency, lost) = self.draw(client, leg.up());
        if lost {
            return None;
        }
        let (node, at) = (node(client), server_time(now));
        let late = match leg {
            Leg::Request => lateness(self.up.admit_command(node, at)),
            Leg::Reply => lateness(self.down.admit_command(node, at)),
            Leg::Message => match self.down.admit_delivery(node, at) {
                DeliveryFate::Deliver => Some(0),
                DeliveryFate::Drop => None,
                DeliveryFate::HoldUntil(_) => unreachable!("the network's plans hold no pause"),
            },
        };
        Some(latency + late?)
    }

    /// Whether a message between `client` and node `node` (`None`: the one node) at `now` is
    /// lost to a partition that cuts the client off from the node.
    pub(super) fn cut(&self, client: usize, node: Option<usize>, now: u64) -> bool {
        let Some(node) = node else { return false };
        self.partitions.iter().any(|(n, from, to, clients)| {
            *n == node && *from <= now && now < *to && clients.contains(&client)
        })
    }

    /// Whether a promotion happened at `now` (on any shard).
    pub(super) fn promoted_now(&self, now: u64) -> bool {
        self.promoted.values().any(|&at| at == now)
    }

    /// How long a subscribe, an unsubscribe or its acknowledgement takes (`up`: to the server):
    /// never lost, never delayed by a window.
    pub(super) fn send_subscription(&mut self, client: usize, up: bool) -> u64 {
        self.draw(client, up).0
    }
}

/// The engine's fault that `fault` is, if the server carries it out.
fn server_fault(fault: &Fault) -> Option<fake_redis::Fault> {
    Some(match *fault {
        Fault::Crash { client, at } => fake_redis::Fault::Crash {
            node: node(client),
            at: server_time(at),
        },
        Fault::Restart { at } => fake_redis::Fault::Restart {
            at: server_time(at),
        },
        Fault::Failover { at, lag } => fake_redis::Fault::Failover {
            at: server_time(at),
            lag_ms: i64::try_from(lag).unwrap_or(i64::MAX),
        },
        Fault::ClockJump { at, by } => fake_redis::Fault::ClockJump {
            at: server_time(at),
            delta_ms: by,
        },
        Fault::Promote { at, replica, shard } => fake_redis::Fault::ShardFailover {
            shard,
            replica,
            at: server_time(at),
        },
        Fault::Migrate {
            lock,
            to_shard,
            at,
            for_ms,
        } => fake_redis::Fault::SlotMigration {
            slot: fake_redis::key_slot(super::lock_name(lock).as_bytes()),
            to_shard,
            from: server_time(at),
            until: server_time(at + for_ms),
        },
        Fault::Pause { .. }
        | Fault::Partition { .. }
        | Fault::DropRequests { .. }
        | Fault::DropReplies { .. }
        | Fault::DelayRequests { .. }
        | Fault::DelayReplies { .. }
        | Fault::DropPubSub { .. } => return None,
    })
}

/// A delay window of the case: `client`'s messages leaving in `[from, to)` are `by` ms late.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    client: usize,
    from: u64,
    to: u64,
    by: u64,
}

/// Adds the delay `windows` to `plan` as `delay(by)` faults, added up where they overlap.
fn add_delays(plan: &mut FaultPlan, windows: &[Window], delay: fn(u64) -> CommandFate) {
    for w in added_up(windows) {
        plan.add(on_messages(w.client, delay(w.by), w.from, w.to));
    }
}

/// The delay windows cut at every edge into segments that do not overlap, each late by the sum
/// of the windows over it: delays add up, as two slow hops do, and in a plan only the first
/// matching fault counts.
fn added_up(windows: &[Window]) -> Vec<Window> {
    let clients: BTreeSet<usize> = windows.iter().map(|w| w.client).collect();
    let mut segments = Vec::new();
    for client in clients {
        let mine: Vec<&Window> = windows
            .iter()
            .filter(|w| w.client == client && w.from < w.to)
            .collect();
        let mut edges: Vec<u64> = mine.iter().flat_map(|w| [w.from, w.to]).collect();
        edges.sort_unstable();
        edges.dedup();
        for edge in edges.windows(2) {
            let (from, to) = (edge[0], edge[1]);
            let by = mine
                .iter()
                .filter(|w| w.from <= from && from < w.to)
                .fold(0u64, |sum, w| sum.saturating_add(w.by));
            if by > 0 {
                segments.push(Window {
                    client,
                    from,
                    to,
                    by,
                });
            }
        }
    }
    segments
}

/// `fate` for `client`'s messages leaving in `[from, to)` (simulation ms).
fn on_messages(client: usize, fate: CommandFate, from: u64, to: u64) -> fake_redis::Fault {
    fake_redis::Fault::Command {
        node: Some(node(client)),
        fault: fate,
        trigger: during(from, to),
    }
}

/// The window `[from, to)` of simulation ms, on the server's clock as plans read it.
fn during(from: u64, to: u64) -> Trigger {
    Trigger::During {
        from: server_time(from),
        until: server_time(to),
    }
}

/// How much later than its latency a message arrives by its plan's answer; `None` if it is lost.
/// Each plan holds the faults of one direction, so its fate is that of the message asked about.
fn lateness(admission: Admission) -> Option<u64> {
    let Admission::Sent { fate, .. } = admission else {
        unreachable!("the network's plans hold no pause and no crash");
    };
    match fate {
        CommandFate::Deliver => Some(0),
        CommandFate::DropRequest | CommandFate::DropReply | CommandFate::LinkDown { .. } => None,
        CommandFate::DelayRequest(ms) | CommandFate::DelayReply(ms) => Some(ms),
    }
}

impl<S: SimServer> World<S> {
    /// Sends a call the machine made: over the network to the server, with the driver's response
    /// timeout armed whether or not it gets there.
    pub(super) fn send_call(&mut self, client: usize, id: CallId, call: Call) {
        let name = self.name(client);
        self.clients[client].unlocked.check_renewal(
            self.now,
            &self.case.clients[client].name,
            &call,
            &mut self.history.online,
        );
        self.clients[client].inflight.insert(id);
        self.fair_call_sent(client, &call);
        let mut arrives = self.network.send(client, Leg::Request, self.now);
        let to = self.server.route(self.clients[client].conn, &call);
        let cut = self.network.cut(client, to, self.now);
        if cut {
            arrives = None;
        }
        self.message_sent(client, id, &call, arrives.is_none());
        match arrives {
            None => self.mark(&name, "dropped", || {
                let why = if cut { " (partitioned)" } else { "" };
                format!("request {} lost{why}", short(&call))
            }),
            Some(after) => {
                self.note(&name, || format!("sends {}", describe(&call)));
                self.schedule(self.now + after, Ev::Arrive { client, id, call });
            }
        }
        let timeout = self.clients[client].machine.config().response_timeout();
        let at = self.sim_time(client, self.client_time(client, self.now) + timeout);
        self.schedule(at, Ev::CallTimeout { client, id });
    }

    /// A call reaches the server: it is applied, observed, and its reply sent back (a synced
    /// call's once its `WAIT` is done).
    pub(super) fn arrive(&mut self, client: usize, id: CallId, call: Call) {
        if self.clients[client].crashed {
            return;
        }
        let conn = self.clients[client].conn;
        let now = self.server_clock();
        let fair = self.fair_attempt(&call);
        let sync = match &call {
            Call::Script(s) => s.sync,
            Call::Command(_) => None,
        };
        let served = match sync {
            Some(wait) => self.server.call_synced(conn, &call, wait, now),
            None => Synced::Done(self.server.call(conn, &call, now), None),
        };
        for line in self.server.take_notes() {
            self.note("server", || line);
        }
        // What the script replied, if it ran: read in place (the reply goes on to the client).
        let script_reply = match &served {
            Synced::Done(result, _) => result.as_ref().ok(),
            Synced::Waiting { reply, .. } => Some(reply),
        };
        if let Some(attempt) = fair {
            let granted = matches!(script_reply, Some(lock_core::Reply::Nil));
            self.check_fair_grant(attempt, granted);
        }
        self.observe_call(client, &call, script_reply);
        match served {
            Synced::Done(result, acks) => self.answer(client, id, &call, result, acks),
            Synced::Waiting {
                ticket,
                reply,
                wake,
            } => {
                let name = self.name(client);
                self.note("server", || {
                    format!(
                        "applies {} from {name} -> {reply}, WAIT blocks",
                        describe(&call)
                    )
                });
                let at = self.wake_time(wake);
                self.waits.insert(ticket, (client, id, call, reply));
                self.schedule(at, Ev::WaitPoll { ticket });
            }
        }
        self.deliver_messages();
    }

    /// The simulation time of server time `wake` (before jumps), never before now.
    fn wake_time(&self, wake: i64) -> u64 {
        u64::try_from(wake.saturating_sub(EPOCH_MS))
            .unwrap_or(0)
            .max(self.now)
    }

    /// The server looks again at a synced call's blocked `WAIT`, if it still blocks.
    /// `forced`: asked out of turn (a failover), with its own poll still on the queue.
    pub(super) fn wait_poll(&mut self, ticket: u64, forced: bool) {
        if !self.waits.contains_key(&ticket) {
            return;
        }
        match self.server.poll_wait(ticket, self.server_clock()) {
            Err(_) if forced => {}
            Err(wake) => {
                let at = self.wake_time(wake).max(self.now + 1);
                self.schedule(at, Ev::WaitPoll { ticket });
            }
            Ok(done) => {
                let Some((client, id, call, reply)) = self.waits.remove(&ticket) else {
                    return;
                };
                match done {
                    Ok(acks) => self.answer(client, id, &call, Ok(reply), Some(acks)),
                    Err(e) => self.answer(client, id, &call, Err(e), None),
                }
            }
        }
    }

    /// Sends a call's reply back to its client.
    fn answer(
        &mut self,
        client: usize,
        id: CallId,
        call: &Call,
        result: Result<lock_core::Reply, lock_core::BackendError>,
        acks: Option<ReplicaAcks>,
    ) {
        let name = self.name(client);
        let mut reply_after = self.network.send(client, Leg::Reply, self.now);
        let from = self.server.route(self.clients[client].conn, call);
        if self.network.cut(client, from, self.now) {
            reply_after = None;
        }
        self.message_applied(client, id, &result, reply_after.is_none());
        self.note("server", || {
            format!(
                "applies {} from {name} -> {}{}{}",
                describe(call),
                match &result {
                    Ok(r) => r.to_string(),
                    Err(e) => e.to_string(),
                },
                match acks {
                    Some(a) => format!(" (WAIT: {} of {} replicas)", a.acked, a.connected),
                    None => String::new(),
                },
                if reply_after.is_none() {
                    " (reply lost)"
                } else {
                    ""
                }
            )
        });
        match reply_after {
            None => self.mark(&name, "dropped", || {
                format!("reply to {} lost", short(call))
            }),
            Some(after) => self.schedule(
                self.now + after,
                Ev::Reply {
                    client,
                    id,
                    result,
                    acks,
                },
            ),
        }
    }

    /// Sends what the server published since the last call to the clients subscribed.
    fn deliver_messages(&mut self) {
        for (conn, channel, payload) in self.server.take_messages() {
            let Some(&client) = self.conn_owner.get(&conn) else {
                continue;
            };
            if self.clients[client].crashed {
                continue;
            }
            if let Some(after) = self.network.send(client, Leg::Message, self.now) {
                self.schedule(
                    self.now + after,
                    Ev::Message {
                        client,
                        channel,
                        payload,
                        sent: self.now,
                    },
                );
            }
        }
    }

    /// Remembers which unlock channels the machine wants (for re-subscribing after the server
    /// lost its connections) and sends the subscribe or unsubscribe.
    pub(super) fn send_subscription(&mut self, client: usize, channel: Bytes, subscribe: bool) {
        let channels = &mut self.clients[client].channels;
        if subscribe {
            channels.insert(channel.clone());
        } else {
            channels.remove(&channel);
        }
        let after = self.network.send_subscription(client, true);
        self.schedule(
            self.now + after,
            Ev::SubArrive {
                client,
                channel,
                subscribe,
            },
        );
    }

    /// A subscribe or unsubscribe reaches the server; a subscribe is acknowledged.
    pub(super) fn subscription_arrives(&mut self, client: usize, channel: Bytes, subscribe: bool) {
        if self.clients[client].crashed {
            return;
        }
        let conn = self.clients[client].sub_conn;
        let now = self.server_clock();
        if subscribe {
            self.server.subscribe(conn, &channel, now);
            let after = self.network.send_subscription(client, false);
            self.schedule(self.now + after, Ev::Subscribed { client, channel });
        } else {
            self.server.unsubscribe(conn, &channel, now);
        }
    }

    /// Carries out the scheduled fault `index` of the case.
    pub(super) fn fault(&mut self, index: usize) {
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
                self.server_fault(index);
                self.close_section(client);
                self.mark(&name, "crash", String::new);
            }
            Fault::Restart { .. } => {
                self.server_fault(index);
                self.data_lost("restart", || {
                    "(no persistence: data and scripts lost)".into()
                });
            }
            Fault::Failover { lag, .. } => {
                self.server_fault(index);
                self.data_lost("failover", || format!("(replica lagging {lag} ms)"));
            }
            Fault::Promote { replica, shard, .. } => {
                if self.network.promoted.contains_key(&shard)
                    || replica >= self.network.replicas
                    || shard >= self.network.shards
                {
                    self.mark("server", "no-failover", || {
                        format!("(no replica {replica} follows shard {shard}'s primary)")
                    });
                    return;
                }
                self.network.promoted.insert(shard, self.now);
                self.server_fault(index);
                // The old primary's connections close: the WAITs blocked there end now.
                let tickets: Vec<u64> = self.waits.keys().copied().collect();
                for ticket in tickets {
                    self.wait_poll(ticket, true);
                }
                self.network.promoting = true;
                self.data_lost("failover", || {
                    format!("(replica {replica} promoted with what it received)")
                });
                self.network.promoting = false;
            }
            Fault::Migrate {
                lock,
                to_shard,
                for_ms,
                ..
            } => {
                self.server_fault(index);
                self.mark("server", "migrate", || {
                    format!(
                        "{}'s slot to shard {to_shard} over {for_ms} ms",
                        lock_name(lock)
                    )
                });
                self.observe_all();
            }
            Fault::Partition {
                node,
                for_ms,
                ref clients,
                ..
            } => {
                let (from, until) = (self.server_clock(), server_time(self.now + for_ms));
                self.server.isolate(usize::from(node), from, until);
                let names: Vec<String> =
                    clients.iter().map(|&c| self.name(c).to_string()).collect();
                self.mark("server", "partition", || {
                    let cut = if names.is_empty() {
                        "no client".to_owned()
                    } else {
                        names.join(",")
                    };
                    format!("node {node} for {for_ms} ms, from its shard and from {cut}")
                });
            }
            Fault::ClockJump { by, .. } => {
                self.server_fault(index);
                self.mark("server", "clock-jump", || format!("{by:+} ms"));
                self.observe_all();
            }
            // Windows: the network's plans judge each message as it leaves.
            Fault::DropRequests { .. }
            | Fault::DropReplies { .. }
            | Fault::DelayRequests { .. }
            | Fault::DelayReplies { .. }
            | Fault::DropPubSub { .. } => {}
        }
    }

    /// Has the server carry out the case's fault `index`, one of the engine's, now.
    fn server_fault(&mut self, index: usize) {
        if let Some(fault) = self.network.server_faults[index] {
            let now = self.server_clock();
            self.server.fault(fault, now);
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
            let conn = self.server.connect(node(client));
            let cmd = self.server.connect(node(client));
            self.clients[client].sub_conn = conn;
            self.clients[client].conn = cmd;
            self.conn_owner.insert(conn, client);
            let now = self.server_clock();
            for channel in self.clients[client].channels.clone() {
                self.server.subscribe(conn, &channel, now);
            }
            self.feed(client, Input::PubSub(PubSubEvent::SubscriptionRestored));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case_with(faults: Vec<Fault>) -> Case {
        let mut case = Case::new(1, 1_000);
        case.clients = vec![crate::case::ClientSpec::new("a", 0)];
        case.faults = faults;
        case
    }

    #[test]
    fn overlapping_delays_add_up_and_a_drop_wins_over_them() {
        let mut network = Network::new(&case_with(vec![
            Fault::DelayRequests {
                client: 0,
                from: 0,
                to: 100,
                by: 5,
            },
            Fault::DelayRequests {
                client: 0,
                from: 50,
                to: 150,
                by: 7,
            },
            Fault::DropRequests {
                client: 0,
                from: 120,
                to: 130,
            },
        ]));
        let mut at = |now| network.send(0, Leg::Request, now);
        assert_eq!(at(10), Some(1 + 5));
        assert_eq!(at(60), Some(1 + 5 + 7));
        assert_eq!(at(125), None);
        assert_eq!(at(140), Some(1 + 7));
        assert_eq!(at(150), Some(1));
    }

    #[test]
    fn each_direction_is_judged_when_its_message_leaves() {
        let mut network = Network::new(&case_with(vec![
            Fault::DropReplies {
                client: 0,
                from: 100,
                to: 200,
            },
            Fault::DropPubSub {
                client: 0,
                from: 300,
                to: 400,
            },
        ]));
        // A request sent just before the window opens has its reply, leaving in it, lost.
        assert_eq!(network.send(0, Leg::Request, 99), Some(1));
        assert_eq!(network.send(0, Leg::Reply, 100), None);
        assert_eq!(network.send(0, Leg::Reply, 200), Some(1));
        assert_eq!(network.send(0, Leg::Request, 150), Some(1));
        assert_eq!(network.send(0, Leg::Message, 150), Some(1));
        assert_eq!(network.send(0, Leg::Message, 300), None);
        assert_eq!(network.send(0, Leg::Reply, 300), Some(1));
    }
}
