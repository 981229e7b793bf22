//! A client's link to the engine: where the fault plan meets tokio time.
//!
//! Every command front door ([`FakeConnection`](crate::FakeConnection) here, and the lock's
//! backend in its own crate, `lock_core::fake::FakeBackend`) sends through a [`Link`], which is
//! public for such doors. It owns the node's engine
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
//!
//! Beside the mutex sits the engine's script watch (`engine/script_watch.rs`), which the TCP
//! server reads before it locks.

pub(crate) use crate::engine::script_watch::lock;
use crate::engine::{ClientId, Engine};
use crate::fault::{Admission, CommandFate, DeliveryFate, NodeId};
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

/// The response timeout front doors use unless told otherwise (Redisson's default).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a call through a link returned no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// No reply within the response timeout: the call may or may not have been applied.
    TimedOut(String),
    /// The node has crashed: nothing was sent.
    Crashed,
    /// `SHUTDOWN` stopped the server: the connection is refused, nothing was sent.
    ServerDown,
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
/// lock's `FakeBackend` or a [`FakeConnection`](crate::FakeConnection) whose traffic
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
    /// How long the last blocked command waited on the server, for its call's timeout.
    blocked_for: Duration,
    /// Pushes taken from the outbox that the fault plan holds until a time (the node's pause).
    held_pushes: std::collections::VecDeque<(i64, Frame)>,
    /// A reply of the call just landed was one the server does not send (`CLIENT REPLY OFF`,
    /// `engine/reply.rs`): its caller waits for it until its response timeout, as on a socket.
    silenced: bool,
    db: usize,
    protocol: u8,
    latency: Duration,
    requests: Option<RequestLog>,
}

/// One client connection of node `node` to the engine, through the fault plan and tokio time.
/// See the [module docs](self).
pub struct Link {
    /// The engine it talks to.
    pub engine: SharedEngine,
    /// The client process it belongs to, as the fault plan names it.
    pub node: NodeId,
    state: Mutex<LinkState>,
    /// The bound on every call, counted from when the request left.
    pub response_timeout: Duration,
    /// Held while a request runs on the engine, so that a request from a clone waits behind one
    /// that blocked, as on a real connection, where a blocked command holds back the ones sent
    /// after it (the engine takes no command from a blocked client).
    turn: tokio::sync::Mutex<()>,
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
    /// A link of `node` to `engine` whose calls give up after `response_timeout`; it connects on
    /// its first call.
    pub fn new(engine: SharedEngine, node: NodeId, response_timeout: Duration) -> Link {
        Link {
            engine,
            node,
            state: Mutex::new(LinkState {
                client: None,
                blocked_for: Duration::ZERO,
                silenced: false,
                held_pushes: std::collections::VecDeque::new(),
                db: 0,
                protocol: 2,
                latency: Duration::ZERO,
                requests: None,
            }),
            response_timeout,
            turn: tokio::sync::Mutex::new(()),
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

    /// The frames the server pushed to this connection (`MONITOR` lines, RESP3 invalidations),
    /// oldest first, through the fault plan as pub/sub deliveries go: each is delivered, lost,
    /// or held while the node is paused. Returns what is due now, and when the next held one is.
    pub fn take_pushes(&self) -> (Vec<Frame>, Option<i64>) {
        let mut engine = lock(&self.engine);
        let mut state = self.state();
        let now = engine.clock_now();
        if let Some(client) = state.client.filter(|&c| engine.is_connected(c)) {
            while let Some(push) = engine.pop_outbox(client) {
                let fate = if engine.fault_plan().is_empty() {
                    engine.fault_plan_mut().count_delivery(self.node);
                    DeliveryFate::Deliver
                } else {
                    engine.fault_plan_mut().admit_delivery(self.node, now)
                };
                match fate {
                    DeliveryFate::Deliver => state.held_pushes.push_back((now, push.frame)),
                    DeliveryFate::Drop => {}
                    DeliveryFate::HoldUntil(t) => state.held_pushes.push_back((t, push.frame)),
                }
            }
        }
        let mut due = Vec::new();
        // In order: a held push holds back the ones behind it, as on a connection.
        while let Some(&(at, _)) = state.held_pushes.front() {
            if at > now {
                return (due, Some(at));
            }
            due.extend(state.held_pushes.pop_front().map(|(_, f)| f));
        }
        (due, None)
    }

    /// Waits for the next push (see [`Link::take_pushes`]); None when the connection is closed
    /// and nothing is left.
    pub async fn next_push(&self) -> Option<Frame> {
        let signal = Arc::new(Unblocked(tokio::sync::Notify::new()));
        let waker = std::task::Waker::from(Arc::clone(&signal));
        let mut ready: std::collections::VecDeque<Frame> = std::collections::VecDeque::new();
        loop {
            let (frames, next_held) = self.take_pushes();
            ready.extend(frames);
            if let Some(frame) = ready.pop_front() {
                // Later ones stay for the next call.
                let mut state = self.state();
                for f in ready.into_iter().rev() {
                    state.held_pushes.push_front((i64::MIN, f));
                }
                return Some(frame);
            }
            let connected = {
                let mut engine = lock(&self.engine);
                match self.state().client.filter(|&c| engine.is_connected(c)) {
                    Some(c) => {
                        engine.register_waker(c, &waker);
                        true
                    }
                    None => false,
                }
            };
            if !connected && next_held.is_none() {
                return None;
            }
            match next_held {
                Some(at) => tokio::select! {
                    () = signal.0.notified() => {}
                    () = sleep_until_clock(&self.engine, at) => {}
                },
                None => signal.0.notified().await,
            }
        }
    }

    /// Runs `commands` back to back on the engine, now, and then, if one blocked the connection
    /// (`BLPOP` and its kin), the rest once its block ends. `on` pins the connection a delayed
    /// request was sent on: if it closed meanwhile, or while blocked, the request is lost
    /// (`None`).
    async fn apply(
        &self,
        commands: &[Vec<Bytes>],
        on: Option<ClientId>,
        logged: Option<&Logged>,
    ) -> Option<Vec<Frame>> {
        let _turn = self.turn.lock().await;
        let mut replies = Vec::with_capacity(commands.len());
        let client = {
            let mut engine = lock(&self.engine);
            // A restart due now closes connections before this request picks one.
            engine.apply_due_server_faults();
            let client = match on {
                Some(c) if !engine.is_connected(c) => return None,
                Some(c) => c,
                None => self.connection(&mut engine),
            };
            if let Some(logged) = logged {
                logged.log.mark_applied(logged.index);
            }
            if !self.run_until_blocked(&mut engine, client, commands, &mut replies) {
                // A `SHUTDOWN` among them closed the connection without a reply.
                return (!engine.is_shut_down()).then_some(replies);
            }
            client
        };
        // Blocked: a caller that stops waiting takes the block back, as a client that closes a
        // blocked connection would.
        let blocked_at = Instant::now();
        let _note = NoteBlocked {
            link: self,
            since: blocked_at,
        };
        let mut cancel = CancelBlock {
            engine: &self.engine,
            client: Some(client),
        };
        loop {
            replies.push(wait_unblocked(&self.engine, client).await?);
            let mut engine = lock(&self.engine);
            if engine.reply_is_silenced(client) {
                self.state().silenced = true;
            }
            if !self.run_until_blocked(&mut engine, client, commands, &mut replies) {
                cancel.client = None;
                return Some(replies);
            }
        }
    }

    /// Runs the commands after those already answered in `replies`, until one blocks (true) or
    /// all have run (false); the connection's database and protocol are noted.
    fn run_until_blocked(
        &self,
        engine: &mut Engine,
        client: ClientId,
        commands: &[Vec<Bytes>],
        replies: &mut Vec<Frame>,
    ) -> bool {
        let mut blocked = false;
        while let Some(argv) = commands.get(replies.len()) {
            match engine.execute_or_block(client, argv) {
                Some(reply) => {
                    if engine.reply_is_silenced(client) {
                        self.state().silenced = true;
                    }
                    replies.push(reply);
                }
                None => {
                    blocked = true;
                    break;
                }
            }
        }
        let mut state = self.state();
        state.db = engine.selected_db(client);
        state.protocol = engine.protocol(client);
        blocked
    }

    /// How long the call just landed waited blocked on the server (zero if it did not block).
    fn take_blocked_time(&self) -> Duration {
        std::mem::take(&mut self.state().blocked_for)
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
            if engine.is_shut_down() {
                // A restart due now brings a stopped server back first.
                engine.apply_due_server_faults();
                if engine.is_shut_down() {
                    return Ok(Err(LinkError::ServerDown));
                }
            }
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
        // The time a blocking command spent blocked on the server is the command's own: the
        // response timeout counts without it (a client sets its timeout to cover its `BLPOP`).
        let give_up = give_up + self.take_blocked_time();
        let Some(replies) = landed else {
            // Lost with its connection (a restart or a `SHUTDOWN` meanwhile): the caller still
            // waits it out.
            return self.time_out(give_up).await;
        };
        if std::mem::take(&mut self.state().silenced) {
            // The server sends no reply for one of them: the caller waits for it in vain.
            return self.time_out(give_up).await;
        }
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
            return Ok(self.apply(&commands, None, logged.as_ref()).await);
        }
        let sent_on = {
            let mut e = lock(&self.engine);
            self.connection(&mut e)
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let link = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(replies) = link.apply(&commands, Some(sent_on), logged.as_ref()).await {
                let _ = tx.send(replies);
            }
        });
        match tokio::time::timeout_at(give_up, rx).await {
            Ok(landed) => Ok(landed.ok()),
            Err(_) => Err(self.timed_out()),
        }
    }
}

/// Waits until the block of `client` ends, and takes its reply: None when the connection closed
/// (a disconnect, a restart, a crash). Its timeout is the engine's: this sleeps until the
/// deadline on tokio's clock, then lets the engine catch up, which answers it.
async fn wait_unblocked(engine: &SharedEngine, client: ClientId) -> Option<Frame> {
    let signal = Arc::new(Unblocked(tokio::sync::Notify::new()));
    let waker = std::task::Waker::from(Arc::clone(&signal));
    loop {
        let deadline = {
            let mut engine = lock(engine);
            if let Some(reply) = engine.take_unblocked_reply(client) {
                return Some(reply);
            }
            if !engine.is_blocked(client) {
                return None;
            }
            engine.wake_when_unblocked(client, &waker);
            engine.block_deadline(client)
        };
        match deadline {
            Some(at) => tokio::select! {
                () = signal.0.notified() => {}
                () = sleep_until_clock(engine, at) => {
                    lock(engine).catch_up();
                }
            },
            None => signal.0.notified().await,
        }
    }
}

/// Wakes a link waiting for a block to end (a `Notify` keeps the wake-up if it comes before the
/// wait).
struct Unblocked(tokio::sync::Notify);

impl std::task::Wake for Unblocked {
    fn wake(self: Arc<Self>) {
        self.0.notify_one();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.notify_one();
    }
}

/// Notes how long a call waited blocked on the server, however the wait ends.
struct NoteBlocked<'a> {
    link: &'a Link,
    since: Instant,
}

impl Drop for NoteBlocked<'_> {
    fn drop(&mut self) {
        self.link.state().blocked_for = Instant::now().saturating_duration_since(self.since);
    }
}

/// Takes back the block of a call whose caller stopped waiting (dropped the future): the engine
/// forgets it, as it forgets a blocked client that closed its connection.
struct CancelBlock<'a> {
    engine: &'a SharedEngine,
    client: Option<ClientId>,
}

impl Drop for CancelBlock<'_> {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            lock(self.engine).cancel_block(client);
        }
    }
}
