//! A client's link to the engine: where the fault plan meets tokio time.
//!
//! Both command front doors ([`FakeBackend`](crate::FakeBackend) and
//! [`FakeConnection`](crate::FakeConnection)) send through a `Link`. It owns the node's engine
//! connection (reconnecting transparently, as a connection manager does, when a restart or failover
//! closed it while idle), asks the plan what happens to each call, and carries that out with tokio
//! sleeps, so that under tokio's paused time a 35-second GC pause costs nothing. The engine lock
//! (a std mutex) is never held across an `.await`.
//!
//! Two options model the wire itself rather than a fault. A *latency* makes every request and
//! every reply take that long on the way (a round trip costs twice it): a request in flight lands
//! even if its caller stops waiting, as on a real network, and the fault plan's delays add to it.
//! A [`RequestLog`] records every request as it leaves the client, with the fate the plan gave it
//! and whether the server applied it, so a test can state what a client *sent* ("no renewal
//! after the unlock"), lost requests included, which the server's state alone cannot show.

use crate::engine::{ClientId, Engine};
use crate::fault::{CommandFate, FaultEventKind, NodeId};
use crate::frame::Frame;
use bytes::Bytes;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// An engine shared by front doors (a std mutex: commands never wait inside it).
pub type SharedEngine = Arc<Mutex<Engine>>;

/// Wraps an engine for sharing between front doors.
pub fn shared(engine: Engine) -> SharedEngine {
    Arc::new(Mutex::new(engine))
}

/// Locks the engine; a panic while it was held poisons nothing the engine relies on.
pub(crate) fn lock(engine: &SharedEngine) -> MutexGuard<'_, Engine> {
    engine.lock().unwrap_or_else(|e| e.into_inner())
}

/// The response timeout front doors use unless told otherwise (Redisson's default).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a call through a link returned no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LinkError {
    /// No reply within the response timeout: the call may or may not have been applied.
    TimedOut(String),
    /// The node has crashed: nothing was sent.
    Crashed,
}

/// One request as it left a client, in a [`RequestLog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentRequest {
    /// When it left the client (after any pause of the node): unix ms on the engine's clock,
    /// before clock jumps, as fault plans are written.
    pub at: i64,
    /// The node that sent it.
    pub node: NodeId,
    /// The node's command sequence number, the one [`Trigger`](crate::Trigger)s count.
    pub seq: u64,
    /// The commands, name first (a pipeline or a transaction sends several at once).
    pub commands: Vec<Vec<Bytes>>,
    /// What the fault plan decided for it.
    pub fate: CommandFate,
    /// Whether the server has applied it: false for a lost request, and for a delayed one until it
    /// lands.
    pub applied: bool,
}

/// A shared record of the requests front doors send, oldest first: give a clone to each
/// [`FakeBackend`](crate::FakeBackend) or [`FakeConnection`](crate::FakeConnection) whose traffic
/// a test wants to see. Only requests go in (pub/sub subscriptions and deliveries do not).
#[derive(Clone, Debug, Default)]
pub struct RequestLog {
    entries: Arc<Mutex<Vec<SentRequest>>>,
}

impl RequestLog {
    /// An empty log.
    pub fn new() -> RequestLog {
        RequestLog::default()
    }

    /// Every request recorded so far, oldest first.
    pub fn entries(&self) -> Vec<SentRequest> {
        self.lock().clone()
    }

    /// How many requests were recorded.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<SentRequest>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, request: SentRequest) -> usize {
        let mut entries = self.lock();
        entries.push(request);
        entries.len() - 1
    }

    fn mark_applied(&self, index: usize) {
        if let Some(entry) = self.lock().get_mut(index) {
            entry.applied = true;
        }
    }
}

/// A request's place in a [`RequestLog`], to mark it applied when it lands.
#[derive(Clone)]
struct Logged {
    log: RequestLog,
    index: usize,
}

struct LinkState {
    client: Option<ClientId>,
    db: usize,
    protocol: u8,
    latency: Duration,
    requests: Option<RequestLog>,
}

pub(crate) struct Link {
    pub engine: SharedEngine,
    pub node: NodeId,
    state: Mutex<LinkState>,
    pub response_timeout: Duration,
}

/// Sleeps until the engine's clock (before jumps) reads `until`, assuming it moves with tokio's
/// clock (a `TokioClock`, or real time).
pub(crate) async fn sleep_until_clock(engine: &SharedEngine, until: i64) {
    let now = lock(engine).clock_now();
    if until > now {
        tokio::time::sleep(Duration::from_millis((until - now) as u64)).await;
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The last handle is gone: close the connection, as dropping a real one would.
        if let Some(c) = self.state().client.take() {
            lock(&self.engine).disconnect(c);
        }
    }
}

impl Link {
    pub fn new(engine: SharedEngine, node: NodeId, response_timeout: Duration) -> Link {
        Link {
            engine,
            node,
            state: Mutex::new(LinkState {
                client: None,
                db: 0,
                protocol: 2,
                latency: Duration::ZERO,
                requests: None,
            }),
            response_timeout,
        }
    }

    fn state(&self) -> MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The database the connection has selected.
    pub fn db(&self) -> usize {
        self.state().db
    }

    /// The protocol the connection speaks.
    pub fn protocol(&self) -> u8 {
        self.state().protocol
    }

    /// Every request and every reply takes `one_way` from now on.
    pub fn set_latency(&self, one_way: Duration) {
        self.state().latency = one_way;
    }

    /// The one-way latency.
    pub fn latency(&self) -> Duration {
        self.state().latency
    }

    /// Records every request sent from now on in `log`.
    pub fn set_request_log(&self, log: RequestLog) {
        self.state().requests = Some(log);
    }

    /// The engine connection, opened (or reopened after a restart, with its database and protocol)
    /// if needed.
    fn connection(&self, engine: &mut Engine) -> ClientId {
        let mut state = self.state();
        if let Some(c) = state.client
            && engine.is_connected(c)
        {
            return c;
        }
        let c = engine.connect_as(self.node);
        if state.db != 0 {
            engine.execute(
                c,
                &[
                    Bytes::from_static(b"SELECT"),
                    Bytes::from(state.db.to_string()),
                ],
            );
        }
        if state.protocol != 2 {
            engine.execute(
                c,
                &[
                    Bytes::from_static(b"HELLO"),
                    Bytes::from(state.protocol.to_string()),
                ],
            );
        }
        state.client = Some(c);
        c
    }

    /// Runs `commands` back to back on the engine, now. `on` pins the connection a delayed request
    /// was sent on: if it closed meanwhile, the request is lost (`None`).
    fn apply(
        &self,
        commands: &[Vec<Bytes>],
        on: Option<ClientId>,
        logged: Option<&Logged>,
    ) -> Option<Vec<Frame>> {
        let mut engine = lock(&self.engine);
        // A restart due now closes connections before this request picks one.
        engine.apply_due_server_faults();
        let client = match on {
            Some(c) if !engine.is_connected(c) => return None,
            Some(c) => c,
            None => self.connection(&mut engine),
        };
        let replies = commands
            .iter()
            .map(|argv| engine.execute(client, argv))
            .collect();
        if let Some(logged) = logged {
            logged.log.mark_applied(logged.index);
        }
        let mut state = self.state();
        state.db = engine.selected_db(client);
        state.protocol = engine.protocol(client);
        Some(replies)
    }

    fn timed_out(&self) -> LinkError {
        LinkError::TimedOut(format!(
            "no reply within the response timeout of {} ms",
            self.response_timeout.as_millis()
        ))
    }

    /// Sends `commands` as one request and waits for their replies, through the fault plan and
    /// the latency. The whole call is bounded by the response timeout, counted from when the
    /// request left.
    pub async fn call(
        self: &Arc<Self>,
        commands: Vec<Vec<Bytes>>,
    ) -> Result<Vec<Frame>, LinkError> {
        let node = self.node;
        // A paused node sends nothing until its pause ends.
        let mut waited = 0;
        loop {
            let paused = {
                let e = lock(&self.engine);
                e.fault_plan().paused_until(node, e.clock_now())
            };
            let Some(until) = paused else { break };
            if waited == 0 {
                lock(&self.engine).log_fault(Some(node), None, FaultEventKind::PausedUntil(until));
            }
            waited += 1;
            if waited > 64 {
                break; // the clock does not move with tokio's: do not spin forever
            }
            sleep_until_clock(&self.engine, until).await;
        }
        let (seq, fate, at) = {
            let mut e = lock(&self.engine);
            let now = e.clock_now();
            if e.fault_plan().crash_time(node).is_some_and(|t| t <= now) {
                return Err(LinkError::Crashed);
            }
            let seq = e.next_command_seq(node);
            (seq, e.fault_plan().command_fate(node, seq, now), now)
        };
        let sent = Instant::now();
        let give_up = sent + self.response_timeout;
        let (latency, requests) = {
            let state = self.state();
            (state.latency, state.requests.clone())
        };
        let logged = requests.map(|log| Logged {
            index: log.record(SentRequest {
                at,
                node,
                seq,
                commands: commands.clone(),
                fate,
                applied: false,
            }),
            log,
        });
        let log = |kind| lock(&self.engine).log_fault(Some(node), Some(seq), kind);
        let (request_delay, reply_delay) = match fate {
            CommandFate::DropRequest | CommandFate::LinkDown { .. } => {
                log(if matches!(fate, CommandFate::DropRequest) {
                    FaultEventKind::RequestDropped
                } else {
                    FaultEventKind::LinkDown
                });
                tokio::time::sleep_until(give_up).await;
                return Err(self.timed_out());
            }
            CommandFate::DelayRequest(ms) => {
                log(FaultEventKind::RequestDelayed(ms));
                (latency + Duration::from_millis(ms), latency)
            }
            CommandFate::DelayReply(ms) => (latency, latency + Duration::from_millis(ms)),
            CommandFate::Deliver | CommandFate::DropReply => (latency, latency),
        };
        let replies = if request_delay.is_zero() {
            self.apply(&commands, None, logged.as_ref())
        } else {
            let sent_on = {
                let mut e = lock(&self.engine);
                self.connection(&mut e)
            };
            // The request is in flight whatever the caller does: it lands even if the caller
            // gives up (a timeout, a dropped future) before it does.
            let (tx, rx) = tokio::sync::oneshot::channel();
            let link = Arc::clone(self);
            tokio::spawn(async move {
                tokio::time::sleep(request_delay).await;
                if let Some(replies) = link.apply(&commands, Some(sent_on), logged.as_ref()) {
                    let _ = tx.send(replies);
                }
            });
            match tokio::time::timeout_at(give_up, rx).await {
                Ok(Ok(replies)) => Some(replies),
                // Lost with its connection (a restart meanwhile): the caller still waits it out.
                Ok(Err(_)) => None,
                Err(_) => return Err(self.timed_out()),
            }
        };
        let Some(replies) = replies else {
            tokio::time::sleep_until(give_up).await;
            return Err(self.timed_out());
        };
        match fate {
            CommandFate::DropReply => {
                log(FaultEventKind::ReplyDropped);
                tokio::time::sleep_until(give_up).await;
                return Err(self.timed_out());
            }
            CommandFate::DelayReply(ms) => log(FaultEventKind::ReplyDelayed(ms)),
            _ => {}
        }
        if Instant::now() + reply_delay >= give_up {
            tokio::time::sleep_until(give_up).await;
            return Err(self.timed_out());
        }
        if !reply_delay.is_zero() {
            tokio::time::sleep(reply_delay).await;
        }
        Ok(replies)
    }
}
