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
use crate::fault::{Admission, CommandFate, NodeId};
use crate::resp::Frame;
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

impl Logged {
    /// Records `request` in `log`.
    fn new(log: RequestLog, request: SentRequest) -> Logged {
        Logged {
            index: log.record(request),
            log,
        }
    }
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

/// Puts `ask` to the engine, with the clock's time (before jumps), until it no longer answers that
/// the node is paused (`Err(until)`), sleeping out each pause in between; `first` is true for the
/// first question only. The plan resolves chained pauses, so a second wait is for a pause added
/// during the first; and after a wait the time asked at is at least the pause's end, so a clock
/// that lags tokio's cannot hold a node forever.
pub(crate) async fn past_pauses<T>(
    engine: &SharedEngine,
    mut ask: impl FnMut(&mut Engine, i64, bool) -> Result<T, i64>,
) -> T {
    let (mut first, mut not_before) = (true, i64::MIN);
    loop {
        let answer = {
            let mut engine = lock(engine);
            let now = engine.clock_now().max(not_before);
            ask(&mut engine, now, first)
        };
        match answer {
            Ok(answer) => return answer,
            Err(until) => {
                (first, not_before) = (false, until);
                sleep_until_clock(engine, until).await;
            }
        }
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

    /// A request as it leaves, for the request log.
    fn sent(&self, at: i64, seq: u64, fate: CommandFate, commands: &[Vec<Bytes>]) -> SentRequest {
        SentRequest {
            at,
            node: self.node,
            seq,
            commands: commands.to_vec(),
            fate,
            applied: false,
        }
    }

    /// Gives up on a call at `give_up`, as its caller's response timeout would.
    async fn time_out<T>(&self, give_up: Instant) -> Result<T, LinkError> {
        tokio::time::sleep_until(give_up).await;
        Err(self.timed_out())
    }

    /// Asks the plan whether and how the next call leaves (waiting out any pause first): its
    /// sequence number, its fate and the engine's time it left at.
    async fn admit(&self) -> Result<(u64, CommandFate, i64), LinkError> {
        past_pauses(&self.engine, |engine, now, first| {
            let plan = engine.fault_plan_mut();
            let admission = if first {
                plan.admit_command(self.node, now)
            } else {
                plan.readmit_command(self.node, now)
            };
            match admission {
                Admission::Paused { until } => Err(until),
                Admission::Crashed => Ok(Err(LinkError::Crashed)),
                Admission::Sent { seq, fate } => Ok(Ok((seq, fate, now))),
            }
        })
        .await
    }

    /// Sends `commands` as one request and waits for their replies, through the fault plan and
    /// the latency. The whole call is bounded by the response timeout, counted from when the
    /// request left.
    pub async fn call(
        self: &Arc<Self>,
        commands: Vec<Vec<Bytes>>,
    ) -> Result<Vec<Frame>, LinkError> {
        let (seq, fate, at) = self.admit().await?;
        let give_up = Instant::now() + self.response_timeout;
        let (latency, requests) = {
            let state = self.state();
            (state.latency, state.requests.clone())
        };
        let logged = requests.map(|log| Logged::new(log, self.sent(at, seq, fate, &commands)));
        let (request_delay, reply_delay) = match fate {
            CommandFate::DropRequest | CommandFate::LinkDown { .. } => {
                return self.time_out(give_up).await;
            }
            CommandFate::DelayRequest(ms) => (latency + Duration::from_millis(ms), latency),
            CommandFate::DelayReply(ms) => (latency, latency + Duration::from_millis(ms)),
            CommandFate::Deliver | CommandFate::DropReply => (latency, latency),
        };
        let landed = self
            .transmit(commands, request_delay, logged, give_up)
            .await?;
        let Some(replies) = landed else {
            // Lost with its connection (a restart meanwhile): the caller still waits it out.
            return self.time_out(give_up).await;
        };
        if fate == CommandFate::DropReply || Instant::now() + reply_delay >= give_up {
            return self.time_out(give_up).await;
        }
        if !reply_delay.is_zero() {
            tokio::time::sleep(reply_delay).await;
        }
        Ok(replies)
    }

    /// Carries a request to the engine `delay` after it left: at once, or on the wire, where it
    /// lands whatever the caller does (a timeout, a dropped future). `None` if it was lost with its
    /// connection; a timeout if `give_up` comes before it lands.
    async fn transmit(
        self: &Arc<Self>,
        commands: Vec<Vec<Bytes>>,
        delay: Duration,
        logged: Option<Logged>,
        give_up: Instant,
    ) -> Result<Option<Vec<Frame>>, LinkError> {
        if delay.is_zero() {
            return Ok(self.apply(&commands, None, logged.as_ref()));
        }
        let sent_on = {
            let mut e = lock(&self.engine);
            self.connection(&mut e)
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let link = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(replies) = link.apply(&commands, Some(sent_on), logged.as_ref()) {
                let _ = tx.send(replies);
            }
        });
        match tokio::time::timeout_at(give_up, rx).await {
            Ok(landed) => Ok(landed.ok()),
            Err(_) => Err(self.timed_out()),
        }
    }
}
