//! The network between the clients and the server, and the faults: every decision about what
//! goes wrong in a run is made in this file.
//!
//! A message's fate is a pure function of the case: its one-way latency and whether it is lost
//! are drawn from (seed, stream, client, the client's message count), and the fault windows open
//! when it leaves add their drops and delays. Each direction has its own loss rate: requests go
//! up, replies and pub/sub messages come down. Subscribe and unsubscribe requests and their
//! acknowledgements take a latency but are never lost; a subscriber loses its subscriptions only
//! with the server's connections. The scheduled faults (a pause, a crash, a restart, a failover,
//! a clock jump) are carried out here too, so the fault model is this one file.

use super::observe::{describe, short};
use super::workload::Phase;
use super::{Ev, World, stream};
use crate::case::{Case, Fault};
use crate::server::SimServer;
use bytes::Bytes;
use lock_core::PubSubEvent;
use lock_core::machine::{Call, CallId, Input};
use lock_core::seed::Seed;

/// Which way a message goes, and so which loss rate and fault windows apply to it.
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

    /// Whether `fault`, open when the message leaves, loses it.
    fn lost_to(self, fault: &Fault) -> bool {
        matches!(
            (self, fault),
            (Leg::Request, Fault::DropRequests { .. })
                | (Leg::Reply, Fault::DropReplies { .. })
                | (Leg::Message, Fault::DropPubSub { .. })
        )
    }

    /// How much later `fault`, open when the message leaves, makes it arrive.
    fn delayed_by(self, fault: &Fault) -> u64 {
        match (self, fault) {
            (Leg::Request, Fault::DelayRequests { by, .. })
            | (Leg::Reply, Fault::DelayReplies { by, .. }) => *by,
            _ => 0,
        }
    }
}

/// The message model: latency, random loss, and the fault windows on each client's messages.
pub(super) struct Network {
    seed: Seed,
    latency: (u64, u64),
    /// Per mille, (up, down).
    loss: (u32, u32),
    /// The faults that act on a client's messages during a window, in the case's order.
    windows: Vec<Fault>,
    /// Per client, how many messages it has sent or been sent: each message's draws are keyed by
    /// this count, so one client's traffic never shifts another's.
    messages: Vec<u64>,
}

impl Network {
    pub(super) fn new(case: &Case) -> Network {
        Network {
            seed: Seed(case.seed),
            latency: case.latency,
            loss: case.loss,
            windows: case
                .faults
                .iter()
                .filter(|f| f.window().is_some())
                .cloned()
                .collect(),
            messages: vec![0; case.clients.len()],
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

    /// The faults on `client`'s messages whose window is open at `now`.
    fn open_windows(&self, client: usize, now: u64) -> impl Iterator<Item = &Fault> {
        self.windows.iter().filter(move |f| {
            f.window()
                .is_some_and(|(c, window)| c == client && window.contains(&now))
        })
    }

    /// How long a message of `client` on `leg`, leaving at `now`, takes to arrive; `None` if it
    /// is lost.
    pub(super) fn send(&mut self, client: usize, leg: Leg, now: u64) -> Option<u64> {
        let (latency, lost) = self.draw(client, leg.up());
        if lost || self.open_windows(client, now).any(|f| leg.lost_to(f)) {
            return None;
        }
        let delay: u64 = self
            .open_windows(client, now)
            .map(|f| leg.delayed_by(f))
            .sum();
        Some(latency + delay)
    }

    /// How long a subscribe, an unsubscribe or its acknowledgement takes (`up`: to the server):
    /// never lost, never delayed by a window.
    pub(super) fn send_subscription(&mut self, client: usize, up: bool) -> u64 {
        self.draw(client, up).0
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
        match self.network.send(client, Leg::Request, self.now) {
            None => self.mark(&name, "dropped", || {
                format!("request {} lost", short(&call))
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

    /// A call reaches the server: it is applied, observed, and its reply sent back.
    pub(super) fn arrive(&mut self, client: usize, id: CallId, call: Call) {
        if self.clients[client].crashed {
            return;
        }
        let conn = self.clients[client].conn;
        let now = self.server_now();
        let result = self.server.call(conn, &call, now);
        self.observe_call(client, &call, &result);
        let name = self.name(client);
        let reply_after = self.network.send(client, Leg::Reply, self.now);
        self.note("server", || {
            format!(
                "applies {} from {name} -> {}{}",
                describe(&call),
                match &result {
                    Ok(r) => r.to_string(),
                    Err(e) => e.to_string(),
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
                format!("reply to {} lost", short(&call))
            }),
            Some(after) => self.schedule(self.now + after, Ev::Reply { client, id, result }),
        }
        self.deliver_messages();
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
        let now = self.server_now();
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
}
