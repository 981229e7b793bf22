//! One client connection: bytes in, requests through the engine, replies and pushes out.
//!
//! A connection alternates between two phases, and never holds the engine's lock in an
//! `.await`. In [`Connection::step`], under one lock, it forwards the pub/sub pushes waiting in
//! its outbox, then runs every complete request in its input buffer (each followed by the pushes
//! it queued, the engine's outbox contract), encoding into its output buffer. Then, without the
//! lock, it writes the output (first letting the other connections with input run their step,
//! so replies leave in one burst per round, as Redis writes them before it sleeps), and waits: for
//! more bytes, for a push (the engine wakes it), for the clock (a fault's delay or pause), or for
//! the server to shut down.
//!
//! Output is written once it holds 64 KiB (Redis's per-event write bound) even if more requests
//! are waiting, unless the client's class has an output limit: then, as in Redis, the requests
//! already read all run first, and their replies count against the limit together. While a write is blocked (a client that does not read its replies), the
//! connection reads on and runs the requests that arrive, and collects the pushes that arrive,
//! as Redis runs them with the replies waiting in its output buffer: a command pipelined behind
//! unread replies still runs. What bounds the waiting output is Redis's
//! `client-output-buffer-limit` for the client's class (normal, or pub/sub while it has a
//! subscription; `engine/output_limits.rs`), hard and soft, checked as Redis checks it each time
//! output is added, past its 16 KiB reply buffer; a client past it is closed with nothing more
//! written and nothing more run. Redis sets no limit for normal clients; the fake closes any
//! client at [`OUTPUT_CEILING`] (1 GiB) all the same. While a request waits for the clock, input
//! is read on up to 1 MiB, only to notice a client that left.
//!
//! Faults apply per request when the plan has any (otherwise a request costs one check and the
//! count of its node's commands, so that `SEQS` numbers them from the first). Over TCP a request or
//! reply cannot vanish from the stream and leave the next reply to answer it, so a lost request
//! or reply closes the connection (the client sees its outcome as unknown, as it would after a
//! timeout); a delay or a pause holds the connection, later requests and replies behind it, until
//! the server's clock reaches the end (with the virtual clock: until `FAKE.ADVANCE` gets there).
//!
//! A blocking command (`BLPOP` and its kin) that blocks its client in the engine leaves the
//! connection waiting without the lock and without polling: the engine wakes it when the block
//! ends (served by another client's push, `CLIENT UNBLOCK`, a disconnect), and the clock's wait
//! (a timer on the virtual clock, which `FAKE.ADVANCE` stops at) brings it back at the block's
//! deadline, where the engine's catch-up answers the timeout. Requests read meanwhile run after
//! the reply, as Redis runs a blocked client's pipeline; pushes for it wait until then too.
//!
//! While a script runs in the engine (its connection holds the lock), a connection does not lock:
//! it looks at the engine's script watch first (see the [server docs](super)). Until the script
//! passes the busy threshold it waits for it, as Redis's clients do; past it, it answers from the
//! watch alone, as Redis answers while busy: `BUSY` to every command Redis does not allow while
//! busy, `SCRIPT KILL` and `FUNCTION KILL` through the watch, `SHUTDOWN NOSAVE` by stopping the
//! server, `QUIT`, `FUNCTION STATS` of a busy function from the watch. A transaction's commands
//! are answered at once as Redis answers them (`MULTI` opens one, a refused command dooms it,
//! `EXEC` is refused and drops it, `DISCARD` drops it); what they did is kept beside the
//! connection and settled in the engine at its next step. A command Redis allows while busy that
//! needs the engine (`WATCH`, `HELLO`, `AUTH`, …), or any command of a client that has not
//! authenticated, waits for the script to end, and the connection's later requests behind it. Those answers skip the
//! fault plan: they are not counted as the node's commands. A connection opened while a script
//! runs becomes the engine's client at its first command that needs the engine.

use super::admin::{self, AdminCommand, Outcome};
use super::{Shared, stopped};
use crate::engine::output_limits::{OutputLimit, OutputWatch};
use crate::engine::script_watch::{ScriptKind, ScriptWatch, lock, lock_unless_busy};
use crate::engine::{BusyTransaction, ClientId, Engine};
use crate::fault::{Admission, CommandFate, DeliveryFate, FaultEventKind, NodeId};
use crate::resp::Frame;
use crate::resp::{self, RequestParser};
use bytes::{Buf, Bytes, BytesMut};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

/// Write once this much output is waiting, even if more requests are buffered.
const OUTPUT_HIGH_WATER: usize = 64 * 1024;

/// Room made in the input buffer before each read.
const READ_CHUNK: usize = 16 * 1024;

/// Room made for the first read into an empty input buffer: most requests fit, and a connection
/// waiting for its next one holds no more than this.
const FIRST_READ: usize = 1024;

/// While a request waits for the clock, input is read on (to notice a client that left) up to
/// this much.
const WAIT_READ_LIMIT: usize = 1024 * 1024;

/// An idle connection's buffer larger than this is given back.
const SHRINK_ABOVE: usize = 1024 * 1024;

/// The most unwritten output the server keeps for any client, whatever its class's limit (Redis
/// sets none for normal clients by default): a client that reaches it is closed. The same bound
/// Redis puts on a client's query buffer (`client-query-buffer-limit`).
pub(crate) const OUTPUT_CEILING: u64 = 1024 * 1024 * 1024;

/// Output Redis keeps in a client's fixed reply buffer (`PROTO_REPLY_CHUNK_BYTES`), which its
/// output limits do not count: only what goes past it, into the reply list, does.
const REPLY_BUFFER: usize = 16 * 1024;

/// While a write is blocked, input is read on (and its requests run) while the input buffer
/// holds less than this (an incomplete request is all it can hold).
const INPUT_WHILE_BLOCKED: usize = 1024 * 1024;

/// What Redis writes to a connection over `maxclients` before closing it.
pub(crate) const MAX_CLIENTS_REPLY: &[u8] = b"-ERR max number of clients reached\r\n";

/// Serves one connection to its end (see the [module docs](self)).
pub(crate) async fn serve<IO>(shared: Arc<Shared>, mut io: IO, node: Option<NodeId>)
where
    IO: AsyncRead + AsyncWrite + Send + Unpin,
{
    let open = shared.connections.fetch_add(1, Ordering::SeqCst);
    let _counted = Counted(&shared);
    if open >= shared.clients.maxclients() {
        // Redis checks before creating the client: `maxclients` connections may be open.
        tracing::debug!(open, "refused: max number of clients reached");
        shared.clients.count_rejected();
        let _ = io.write_all(MAX_CLIENTS_REPLY).await;
        let _ = io.shutdown().await;
        return;
    }
    if *shared.shutdown.borrow() {
        return;
    }
    let mut connection = Connection::open(Arc::clone(&shared));
    connection.node = node;
    connection.run(&mut io).await;
    // Whatever ended it, the engine forgets the client at once (subscriptions, watches).
    drop(connection);
    let _ = io.shutdown().await;
}

/// Keeps the open-connection count honest on every exit path.
struct Counted<'a>(&'a Shared);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Wakes the connection's task when the engine queues a push for it (or closes it).
struct PushSignal(Notify);

impl std::task::Wake for PushSignal {
    fn wake(self: Arc<Self>) {
        self.0.notify_one();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.notify_one();
    }
}

/// What the connection does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Every complete request ran: write, then read.
    Read,
    /// The output reached its high-water mark: write, then run the rest.
    Write,
    /// Write, then wait until the clock (before jumps) reads this time.
    WaitUntil(i64),
    /// Write, then move the virtual clock to this time (`FAKE.ADVANCE`) and reply the time.
    Advance(i64),
    /// Write what is there, then close.
    Close,
    /// Write, then wait for the running script to pass the busy threshold or end.
    AwaitScript,
    /// Write, then wait for the engine to end the client's block (it wakes the connection), or
    /// for the clock to reach the block's deadline (before jumps), if it has one.
    Blocked(Option<i64>),
}

/// What a connection waits for the clock to do something with.
enum Waiting {
    /// A request held by its node's pause (its fate is decided when the pause ends).
    Paused(Vec<Bytes>),
    /// A request delayed on its way in: it runs when the wait ends.
    Delayed(Vec<Bytes>),
    /// A reply delayed on its way out, encoded.
    Reply(BytesMut),
    /// A push held by its receiver's pause.
    Push(Frame),
    /// A request read while a script was busy that runs once the script has ended.
    Held(Vec<Bytes>),
    /// A blocking command whose client the engine holds: its reply comes when the block ends,
    /// then waits for `reply_due` if the plan delays it.
    Blocked { reply_due: Option<i64> },
}

/// How far a request has gone through the fault plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Just read.
    Arrived,
    /// Held by a pause that has ended; its pause was logged.
    Unpaused,
    /// Its fate is decided: run it.
    Delivered,
}

struct Connection {
    shared: Arc<Shared>,
    client: ClientId,
    parser: RequestParser,
    input: BytesMut,
    output: BytesMut,
    /// Pushes collected while a write was blocked; appended to `output` after it.
    overflow: BytesMut,
    waiting: Option<Waiting>,
    signal: Arc<PushSignal>,
    waker: Waker,
    /// A wake-up was taken during a write without handling it: step again before waiting.
    recheck: bool,
    /// The due time of the wait in progress, registered with the clock.
    timer: Option<i64>,
    /// Whether `client` is the engine's yet (see the [module docs](self)).
    registered: bool,
    /// The fault plan's node the connection starts as (its client id when `None`).
    node: Option<NodeId>,
    /// Whether the client may run commands (it has authenticated, or needs not).
    authenticated: bool,
    /// Its unwritten output against `client-output-buffer-limit` over time.
    output_watch: OutputWatch,
    /// A write is blocked and requests run meanwhile: the output's high-water mark does not
    /// stop them (its class's limit does).
    write_blocked: bool,
    /// The server's time of the client's last request (ms), for `timeout`.
    last_active: i64,
    /// Input arrived since the last step: the step notes the time.
    active: bool,
    /// When the client, waiting for its next request, is closed as idle (`timeout`): None when
    /// `timeout` is 0 or the client is subscribed, as Redis spares subscribers.
    idle_deadline: Option<i64>,
    /// Whether the engine had a transaction open for the client at its last step.
    in_multi: bool,
    /// The client's protocol at its last step, for the replies answered while a script is busy.
    protocol: u8,
    /// What the client did to its transaction while a script was busy, for the next step.
    busy_transaction: BusyTransaction,
}

impl Connection {
    fn open(shared: Arc<Shared>) -> Connection {
        let mut parser = RequestParser::new();
        parser.set_authenticated(!shared.requirepass);
        let signal = Arc::new(PushSignal(Notify::new()));
        Connection {
            authenticated: !shared.requirepass,
            registered: false,
            node: None,
            shared,
            // Given by the engine at the first step.
            client: ClientId(0),
            parser,
            // Allocated as they fill (see `shrink_buffers`).
            input: BytesMut::new(),
            output: BytesMut::new(),
            overflow: BytesMut::new(),
            waiting: None,
            waker: Waker::from(Arc::clone(&signal)),
            signal,
            recheck: false,
            timer: None,
            output_watch: OutputWatch::default(),
            write_blocked: false,
            last_active: 0,
            active: true,
            idle_deadline: None,
            in_multi: false,
            protocol: 2,
            busy_transaction: BusyTransaction::default(),
        }
    }

    async fn run<IO>(&mut self, io: &mut IO)
    where
        IO: AsyncRead + AsyncWrite + Send + Unpin,
    {
        let mut shutdown = self.shared.shutdown.subscribe();
        loop {
            // A `DEBUG SLEEP` keeps the server busy: nothing runs before it is over, and the
            // sleeper's reply goes out after it.
            if !self.sleep_out(&mut shutdown).await {
                return;
            }
            let flow = self.step();
            if !self.sleep_out(&mut shutdown).await {
                return;
            }
            if !self.output.is_empty() {
                // A reply is an interaction too (Redis notes it when it writes).
                self.active = true;
                // Let the other connections with input run their requests first, then write:
                // replies go out in a burst per round, as Redis writes them before it sleeps.
                tokio::task::yield_now().await;
            }
            // A write blocked on a client that does not read must not hold up a shutdown: Redis
            // closes such a client at once on SIGTERM, whatever its output buffer holds.
            let written = tokio::select! {
                biased;
                () = stopped(&mut shutdown) => return,
                written = self.flush_running(io, flow) => written,
            };
            let flow = match written {
                Ok(flow) => flow,
                Err(e) => {
                    tracing::debug!(client = %self.client, error = %e, "write failed");
                    return;
                }
            };
            match flow {
                Flow::Close => return,
                Flow::Write => {}
                Flow::AwaitScript => {
                    let watch = Arc::clone(&self.shared.scripts);
                    tokio::select! {
                        biased;
                        () = stopped(&mut shutdown) => return,
                        () = watch.changed(watch.busy().is_some()) => {}
                    }
                }
                Flow::Advance(target) => {
                    let shared = Arc::clone(&self.shared);
                    let now = admin::advance_to(&shared, target).await;
                    // Its reply, at the new time, is its last interaction.
                    self.active = true;
                    let connected = {
                        let engine = lock(&shared.engine);
                        let protocol = engine.protocol(self.client);
                        resp::encode(&Frame::Integer(now), protocol, &mut self.output);
                        engine.is_connected(self.client)
                    };
                    if !connected {
                        // A restart on the way closed this connection too: reply, then close.
                        tokio::select! {
                            biased;
                            () = stopped(&mut shutdown) => {}
                            _ = self.flush(io) => {}
                        }
                        return;
                    }
                }
                Flow::Blocked(deadline) => {
                    let shared = Arc::clone(&self.shared);
                    let now = || lock(&shared.engine).clock_now();
                    let signal = Arc::clone(&self.signal);
                    let ended = async {
                        match deadline {
                            Some(until) => tokio::select! {
                                biased;
                                () = signal.0.notified() => {}
                                () = shared.clock.wait_until(until, now) => {
                                    // The engine times the client out when it looks at its clock.
                                    lock(&shared.engine).catch_up();
                                }
                            },
                            None => signal.0.notified().await,
                        }
                    };
                    // What the client sends meanwhile runs once the block has ended.
                    if !read_while_waiting(&mut self.input, io, &mut shutdown, ended).await {
                        return;
                    }
                }
                Flow::WaitUntil(until) => {
                    let shared = Arc::clone(&self.shared);
                    let now = || lock(&shared.engine).clock_now();
                    let reached = shared.clock.wait_until(until, now);
                    if !read_while_waiting(&mut self.input, io, &mut shutdown, reached).await {
                        return;
                    }
                }
                Flow::Read => {
                    if *shutdown.borrow() {
                        return;
                    }
                    self.shrink_buffers();
                    if std::mem::take(&mut self.recheck) {
                        continue;
                    }
                    // A connection between requests waits on a small buffer (see `shrink_buffers`).
                    let room = if self.input.is_empty() {
                        FIRST_READ
                    } else {
                        READ_CHUNK
                    };
                    self.input.reserve(room);
                    let shared = Arc::clone(&self.shared);
                    let idle_due = self.idle_deadline;
                    let idle = async {
                        match idle_due {
                            Some(due) => {
                                let now = || lock(&shared.engine).clock_now();
                                shared.clock.wait_until(due, now).await;
                            }
                            None => std::future::pending().await,
                        }
                    };
                    // In a fixed order, so that a run on a paused clock replays exactly: the
                    // server's stop, then the engine's signal (pushes, an unblock), then input.
                    tokio::select! {
                        biased;
                        () = stopped(&mut shutdown) => return,
                        () = self.signal.0.notified() => {}
                        read = io.read_buf(&mut self.input) => match read {
                            Ok(0) => return,
                            Ok(n) => {
                                self.active = true;
                                if n == room && room < READ_CHUNK && !self.read_more_now(io).await {
                                    return;
                                }
                            }
                            Err(e) => {
                                tracing::debug!(client = %self.client, error = %e, "read failed");
                                return;
                            }
                        },
                        () = idle => {
                            // Still idle by the `timeout` in force now (a CONFIG SET may have
                            // changed it): closed as Redis closes it, without a word.
                            let engine = lock(&shared.engine);
                            let due = idle_deadline(&engine, self.client, self.last_active);
                            if due.is_some_and(|due| engine.clock_now() >= due) {
                                tracing::debug!(client = %self.client, "Closing idle client");
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Waits until a `DEBUG SLEEP` in the engine is over (at once when none is): on a tokio
    /// timer, holding neither the engine nor a worker thread, so the process's other servers
    /// go on. `false` when the server stops meanwhile.
    ///
    /// The engine's time is read without waiting for a script that holds the engine: a worker
    /// parked on its lock serves nobody, and with both of a two-core machine's parked so, the
    /// `SCRIPT KILL` that would end the script was never read. A running script keeps the
    /// server busy by itself (the step answers for it), so the sleep is as good as over here.
    async fn sleep_out(&self, shutdown: &mut tokio::sync::watch::Receiver<bool>) -> bool {
        let Some(until) = self.shared.scripts.asleep_until() else {
            return true;
        };
        let shared = Arc::clone(&self.shared);
        let now = || lock_unless_busy(&shared.engine, &shared.scripts).map(|e| e.now());
        match now() {
            None => return true,
            Some(now) if now >= until => {
                // Over for good: no later step needs to read the time for it again.
                shared.scripts.sleep_over(until);
                return true;
            }
            Some(_) => {}
        }
        tokio::select! {
            biased;
            () = stopped(shutdown) => false,
            () = shared.clock.wait_until(until, || now().unwrap_or(i64::MAX)) => true,
        }
    }

    /// Runs what can run now, under one lock of the engine, or from the script watch while a
    /// script runs (see the [module docs](self)).
    fn step(&mut self) -> Flow {
        let shared = Arc::clone(&self.shared);
        let Some(mut engine) = lock_unless_busy(&shared.engine, &shared.scripts) else {
            return self.step_busy(&shared.scripts);
        };
        if !self.registered {
            self.client = engine.connect();
            // Each connection is its own client process until `FAKE.NODE` says otherwise, unless
            // the in-process handle that opened it named its node.
            let node = self.node.unwrap_or(NodeId(self.client.0));
            engine.set_node(self.client, Some(node));
            self.registered = true;
            tracing::debug!(client = %self.client, "connected");
        }
        let batch = shared.clock.batch();
        // The wait is over; what it was for runs under this same lock, so `FAKE.ADVANCE` never
        // sees the timer gone before the work is done.
        if let Some(due) = self.timer.take() {
            shared.clock.remove_timer(due, self.client);
        }
        if std::mem::take(&mut self.active) {
            self.last_active = engine.clock_now();
        }
        let settled = std::mem::take(&mut self.busy_transaction);
        if settled != BusyTransaction::default() {
            engine.settle_busy_transaction(self.client.0, settled);
        }
        let flow = self.step_locked(&mut engine);
        self.in_multi = engine.in_multi(self.client.0);
        self.protocol = engine.protocol(self.client);
        self.idle_deadline = idle_deadline(&engine, self.client, self.last_active);
        if let Flow::WaitUntil(due) | Flow::Blocked(Some(due)) = flow {
            shared.clock.register_timer(due, self.client);
            self.timer = Some(due);
        }
        drop(batch);
        if let Flow::Blocked(_) = flow {
            // Pushes wait until the block ends: only its end (or a disconnect) wakes it.
            engine.wake_when_unblocked(self.client, &self.waker);
        } else {
            // Wake on the next push (at once if one is already queued).
            engine.register_waker(self.client, &self.waker);
        }
        flow
    }

    /// While a script runs: answers what Redis answers while busy, without the engine (see the
    /// [module docs](self)).
    fn step_busy(&mut self, watch: &ScriptWatch) -> Flow {
        let Some(kind) = watch.busy() else {
            return Flow::AwaitScript;
        };
        if self.waiting.is_some() || !self.authenticated {
            return Flow::AwaitScript;
        }
        loop {
            // The busy replies are small: the high-water mark alone bounds them.
            let argv = match self.next_request(false) {
                Ok(argv) => argv,
                Err(flow) => return flow,
            };
            let mut transaction = BusyView {
                engine_multi: self.in_multi,
                done: &mut self.busy_transaction,
            };
            match while_busy(kind, &argv, watch, &mut transaction) {
                Busy::Reply(reply) => resp::encode(&reply, self.protocol, &mut self.output),
                Busy::Quit => {
                    resp::encode(&Frame::OK, 2, &mut self.output);
                    return Flow::Close;
                }
                Busy::Shutdown => {
                    tracing::info!("SHUTDOWN NOSAVE while a script is busy: stopping");
                    watch.abort();
                    self.shared.shutdown.send_replace(true);
                    return Flow::Close;
                }
                Busy::AfterScript => {
                    self.waiting = Some(Waiting::Held(argv));
                    return Flow::AwaitScript;
                }
            }
        }
    }

    fn step_locked(&mut self, engine: &mut Engine) -> Flow {
        match self.waiting.take() {
            Some(Waiting::Held(argv)) if engine.is_connected(self.client) => {
                if let Some(flow) = self.request(engine, argv, Stage::Arrived) {
                    return flow;
                }
            }
            // The reply was computed before anything closed the connection: it goes out.
            Some(Waiting::Reply(reply)) => self.output.extend_from_slice(&reply),
            Some(Waiting::Push(frame)) => self.encode(engine, frame),
            Some(Waiting::Paused(argv)) if engine.is_connected(self.client) => {
                if let Some(flow) = self.request(engine, argv, Stage::Unpaused) {
                    return flow;
                }
            }
            Some(Waiting::Delayed(argv)) if engine.is_connected(self.client) => {
                if let Some(flow) = self.request(engine, argv, Stage::Delivered) {
                    return flow;
                }
            }
            Some(Waiting::Blocked { reply_due }) => {
                match engine.take_unblocked_reply(self.client) {
                    Some(reply) => {
                        let protocol = engine.protocol(self.client);
                        let silenced = engine.reply_is_silenced(self.client);
                        if !silenced && let Some(flow) = self.reply(&reply, protocol, reply_due) {
                            return flow;
                        }
                    }
                    None if engine.is_blocked(self.client) => {
                        self.waiting = Some(Waiting::Blocked { reply_due });
                        return Flow::Blocked(engine.block_deadline(self.client));
                    }
                    // Closed while blocked: noticed below.
                    None => {}
                }
            }
            _ => {}
        }
        if !engine.is_connected(self.client) {
            // A restart, failover or crash closed it.
            return Flow::Close;
        }
        loop {
            if let Some(flow) = self.forward_pushes(engine) {
                return flow;
            }
            if self.past_output_limit(engine) {
                return Flow::Close;
            }
            let limited = self.has_output_limit(engine);
            let argv = match self.next_request(limited) {
                Ok(argv) => argv,
                Err(flow) => return flow,
            };
            if let Some(flow) = self.request(engine, argv, Stage::Arrived) {
                return flow;
            }
        }
    }

    /// The next complete request in the input, or what the step does instead: write first (the
    /// output is at its high-water mark), read more, or close after a protocol error's reply.
    ///
    /// A client under an output limit (`limited`) is not written to before the requests already
    /// read have run: Redis runs a read's whole pipeline before it writes, so its replies count
    /// against the limit together, and a client whose pipeline passes it is closed before the
    /// rest runs. (Without a limit the high-water mark only bounds the fake's memory.)
    fn next_request(&mut self, limited: bool) -> Result<Vec<Bytes>, Flow> {
        if self.output.len() >= OUTPUT_HIGH_WATER && !self.write_blocked && !limited {
            return Err(Flow::Write);
        }
        match self.parser.parse(&mut self.input) {
            // The parser has copied small arguments out of the input (`resp/request.rs`), so
            // that a value the engine keeps does not pin a read buffer.
            Ok(Some(argv)) => Ok(argv),
            Ok(None) => Err(Flow::Read),
            Err(e) => {
                tracing::debug!(client = %self.client, error = %e, "protocol error");
                e.write_reply(&mut self.output);
                Err(Flow::Close)
            }
        }
    }

    /// The node faults see this connection as.
    fn node(&self, engine: &Engine) -> NodeId {
        engine.node_of(self.client).unwrap_or(NodeId(self.client.0))
    }

    /// Asks the plan about this connection's next request. `None`: a restart due now closed the
    /// connection before the request reached the engine.
    fn admit(&self, engine: &mut Engine, stage: Stage) -> Option<Admission> {
        let node = self.node(engine);
        if stage == Stage::Arrived && engine.fault_plan().is_empty() {
            // Numbered even while the plan is empty, so that `SEQS 0 …` means the node's first
            // commands, as in-process; nothing else to decide, so no clock to read.
            let seq = engine.fault_plan_mut().count_command(node);
            let fate = CommandFate::Deliver;
            return Some(Admission::Sent { seq, fate });
        }
        engine.apply_due_server_faults();
        if !engine.is_connected(self.client) {
            return None;
        }
        let now = engine.clock_now();
        let plan = engine.fault_plan_mut();
        Some(match stage {
            Stage::Arrived => plan.admit_command(node, now),
            _ => plan.readmit_command(node, now),
        })
    }

    /// Runs one request through the fault plan and the engine. `Some` stops the step.
    fn request(&mut self, engine: &mut Engine, argv: Vec<Bytes>, stage: Stage) -> Option<Flow> {
        let admin = argv.first().and_then(|name| AdminCommand::lookup(name));
        let mut reply_due = None;
        if stage != Stage::Delivered && admin.is_none() {
            let fate = match self.admit(engine, stage) {
                Some(Admission::Sent { fate, .. }) => fate,
                Some(Admission::Paused { until }) => {
                    self.waiting = Some(Waiting::Paused(argv));
                    return Some(Flow::WaitUntil(until));
                }
                // Closed by a restart due now, or sent by a node that has crashed.
                None | Some(Admission::Crashed) => return Some(Flow::Close),
            };
            match fate {
                CommandFate::Deliver => {}
                CommandFate::DropRequest | CommandFate::LinkDown { .. } => {
                    return Some(Flow::Close);
                }
                CommandFate::DropReply => {
                    self.execute(engine, admin, &argv);
                    return Some(Flow::Close);
                }
                CommandFate::DelayRequest(ms) => {
                    self.waiting = Some(Waiting::Delayed(argv));
                    return Some(Flow::WaitUntil(after(engine.clock_now(), ms)));
                }
                CommandFate::DelayReply(ms) => reply_due = Some(after(engine.clock_now(), ms)),
            }
        }
        // `SYNC`: the dataset as one bulk payload without a line break after it, as Redis
        // sends its RDB file to a replica, then the command stream through the outbox. `PSYNC`
        // gets a full sync, its `+FULLRESYNC <replid> <offset>` line first.
        let psync = argv.len() >= 3 && argv[0].eq_ignore_ascii_case(b"psync");
        if admin.is_none()
            && (psync || argv.len() == 1 && argv[0].eq_ignore_ascii_case(b"sync"))
            && engine.is_authenticated(self.client)
            && engine
                .client(self.client.0)
                .is_none_or(|c| c.multi.is_none())
            && crate::cmd::psync_refusal(engine, &argv).is_none()
            && let Some(payload) = engine.attach_replica_stream(self.client)
        {
            if psync {
                let (replid, offset) = engine.replication_id_and_offset();
                self.output
                    .extend_from_slice(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes());
            }
            self.output
                .extend_from_slice(format!("${}\r\n", payload.len()).as_bytes());
            self.output.extend_from_slice(&payload);
            return None;
        }
        let protocol = engine.protocol(self.client);
        let reply = match self.execute(engine, admin, &argv) {
            Outcome::Reply(reply) => reply,
            Outcome::AdvanceTo(target) => return Some(Flow::Advance(target)),
        };
        if engine.is_shut_down() {
            // `SHUTDOWN`: the server stops, and its caller gets no reply.
            tracing::info!(client = %self.client, "SHUTDOWN: stopping");
            self.shared.shutdown.send_replace(true);
            return Some(Flow::Close);
        }
        let silenced = admin.is_none() && engine.reply_is_silenced(self.client);
        let connected = engine.is_connected(self.client);
        // HELLO 3 answers in RESP3; a connection that just closed (QUIT) answers as it spoke.
        let protocol = if connected {
            engine.protocol(self.client)
        } else {
            protocol
        };
        if self.shared.requirepass {
            // AUTH, HELLO AUTH and RESET change what the parser accepts next.
            self.authenticated = engine.is_authenticated(self.client);
            self.parser.set_authenticated(self.authenticated);
        }
        if connected && engine.is_blocked(self.client) {
            self.waiting = Some(Waiting::Blocked { reply_due });
            return Some(Flow::Blocked(engine.block_deadline(self.client)));
        }
        if !silenced && let Some(flow) = self.reply(&reply, protocol, reply_due) {
            return Some(flow);
        }
        (!connected).then_some(Flow::Close)
    }

    /// Puts `reply` in the output, or holds it until `reply_due` when the plan delays it (then
    /// the step waits).
    fn reply(&mut self, reply: &Frame, protocol: u8, reply_due: Option<i64>) -> Option<Flow> {
        if let Some(due) = reply_due {
            let mut delayed = BytesMut::new();
            resp::encode(reply, protocol, &mut delayed);
            self.waiting = Some(Waiting::Reply(delayed));
            return Some(Flow::WaitUntil(due));
        }
        resp::encode(reply, protocol, &mut self.output);
        None
    }

    /// Runs a request in the engine (or an admin command in the server). A panic in command code
    /// is a bug in the fake; it becomes an error reply instead of taking the server down.
    fn execute(&self, engine: &mut Engine, admin: Option<AdminCommand>, argv: &[Bytes]) -> Outcome {
        let run = AssertUnwindSafe(|| match admin {
            Some(command) => admin::run(command, &self.shared, engine, self.client, argv),
            // A blocking command that blocks has no reply yet: the caller sees the client
            // blocked and waits for it.
            None => Outcome::Reply(
                engine
                    .execute_or_block(self.client, argv)
                    .unwrap_or(Frame::NullArray),
            ),
        });
        std::panic::catch_unwind(run).unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(client = %self.client, panic = %what, "a command panicked");
            Outcome::Reply(Frame::error_owned(format!(
                "ERR fake-redis bug: the command panicked ({})",
                what.replace(['\r', '\n'], " ")
            )))
        })
    }

    /// Gives back the memory a huge request or reply took, once it is done with, as Redis
    /// shrinks an idle client's query buffer. An empty input buffer is given back whatever its
    /// size: the next read takes a fresh one, so that a connection waiting for its next request
    /// (thousands of them, in a burst) holds no read buffer.
    /// After a first read filled the small buffer, takes what else the socket holds already, up
    /// to a full [`READ_CHUNK`], without waiting for more: a pipeline larger than [`FIRST_READ`]
    /// is then run and answered in one round and one write, as Redis's 16 KiB reads answer it,
    /// rather than in two. `false` if the connection closed or failed.
    async fn read_more_now<IO>(&mut self, io: &mut IO) -> bool
    where
        IO: AsyncRead + Unpin,
    {
        self.input.reserve(READ_CHUNK - FIRST_READ);
        tokio::select! {
            biased;
            read = io.read_buf(&mut self.input) => match read {
                // A close seen here is seen again at the next read, after what was read runs.
                Ok(_) => true,
                Err(e) => {
                    tracing::debug!(client = %self.client, error = %e, "read failed");
                    false
                }
            },
            () = std::future::ready(()) => true,
        }
    }

    fn shrink_buffers(&mut self) {
        if self.input.is_empty() {
            self.input = BytesMut::new();
        }
        if self.output.is_empty() && self.output.capacity() > SHRINK_ABOVE {
            self.output = BytesMut::new();
        }
        if self.overflow.capacity() > SHRINK_ABOVE {
            self.overflow = BytesMut::new();
        }
    }

    /// Moves the pushes queued for this client into the output, through the fault plan.
    fn forward_pushes(&mut self, engine: &mut Engine) -> Option<Flow> {
        if engine.fault_plan().is_empty() {
            while let Some(push) = engine.pop_outbox(self.client) {
                // Numbered even while the plan is empty, as commands are.
                let node = self.node(engine);
                engine.fault_plan_mut().count_delivery(node);
                self.encode(engine, push.frame);
            }
            return None;
        }
        let node = self.node(engine);
        let now = engine.clock_now();
        if engine.fault_plan().subscriber_down(node, now).is_some()
            && engine.is_subscriber(self.client)
        {
            let lost = FaultEventKind::SubscriberLost;
            engine.fault_plan_mut().record(now, Some(node), None, lost);
            return Some(Flow::Close);
        }
        while let Some(push) = engine.pop_outbox(self.client) {
            match engine.fault_plan_mut().admit_delivery(node, now) {
                DeliveryFate::Deliver => self.encode(engine, push.frame),
                DeliveryFate::Drop => {}
                DeliveryFate::HoldUntil(until) => {
                    self.waiting = Some(Waiting::Push(push.frame));
                    return Some(Flow::WaitUntil(until));
                }
            }
        }
        None
    }

    fn encode(&mut self, engine: &Engine, frame: Frame) {
        resp::encode(&frame, engine.protocol(self.client), &mut self.output);
    }

    /// Whether the unwritten output has passed the client's `client-output-buffer-limit` (its
    /// class: pub/sub while it has a subscription, normal otherwise), as Redis checks it each
    /// time it adds a reply. If so the output is dropped, as Redis writes nothing more to a
    /// client it closes for its limit, and the connection is to close.
    fn past_output_limit(&mut self, engine: &Engine) -> bool {
        let pending = self.output.len() + self.overflow.len();
        if pending <= REPLY_BUFFER {
            // Redis's reply buffer holds it: nothing counts yet (and no time is kept).
            self.output_watch = OutputWatch::default();
            return false;
        }
        let subscriber = engine.is_subscriber(self.client);
        let limit = self.class_limit(engine);
        let used = u64::try_from(pending - REPLY_BUFFER).unwrap_or(u64::MAX);
        if !self
            .output_watch
            .over(limit, used, engine.clock_now(), OUTPUT_CEILING)
        {
            return false;
        }
        tracing::warn!(
            client = %self.client,
            class = if subscriber { "pubsub" } else { "normal" },
            "client scheduled to be closed ASAP for overcoming of output buffer limits"
        );
        self.output.clear();
        self.overflow.clear();
        true
    }

    /// The `client-output-buffer-limit` of the client's class: replica once it reads the command
    /// stream (`SYNC`), pub/sub while it has a subscription, normal otherwise.
    fn class_limit<'e>(&self, engine: &'e Engine) -> &'e OutputLimit {
        let limits = &engine.config().output_limits;
        if engine.is_replica_stream(self.client) {
            &limits.replica
        } else if engine.is_subscriber(self.client) {
            &limits.pubsub
        } else {
            &limits.normal
        }
    }

    /// Whether the client's class sets a limit (a hard or a soft size).
    fn has_output_limit(&self, engine: &Engine) -> bool {
        let limit = self.class_limit(engine);
        limit.hard > 0 || limit.soft > 0
    }

    /// Takes a write's result: what it wrote leaves the output.
    fn wrote(&mut self, written: std::io::Result<usize>) -> std::io::Result<()> {
        match written? {
            0 => Err(std::io::ErrorKind::WriteZero.into()),
            n => {
                self.output.advance(n);
                Ok(())
            }
        }
    }

    /// Writes the output after a step that ended with `flow`, and returns what to do next. While
    /// the write is blocked (a client that does not read), the connection reads on and runs the
    /// requests that arrive, as Redis runs them with the replies waiting in its output buffer,
    /// until the client's output limit closes it: a command pipelined behind replies nobody
    /// reads still runs, and one sent before the client left is not lost. A step that ends
    /// otherwise than for more input (a wait, a block, a close) stops that until it is written.
    async fn flush_running<IO>(&mut self, io: &mut IO, mut flow: Flow) -> std::io::Result<Flow>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        // Requests already in the input (behind the output's high-water mark) run as soon as
        // the write blocks, as those that arrive later do.
        let mut unrun = !self.input.is_empty();
        loop {
            if !matches!(flow, Flow::Read | Flow::Write) || self.output.is_empty() {
                self.flush(io).await?;
                return Ok(flow);
            }
            // A write that goes through at once is the common case: no reading meanwhile.
            tokio::select! {
                biased;
                written = io.write(&self.output) => {
                    self.wrote(written)?;
                    self.take_overflow();
                    continue;
                }
                () = std::future::ready(()) => {}
            }
            if std::mem::take(&mut unrun) {
                self.write_blocked = true;
                flow = self.step();
                self.write_blocked = false;
                continue;
            }
            let mut ended = false;
            {
                let (mut reader, mut writer) = tokio::io::split(&mut *io);
                let room = self.input.len() < INPUT_WHILE_BLOCKED;
                if room {
                    self.input.reserve(READ_CHUNK);
                }
                tokio::select! {
                    biased;
                    written = writer.write(&self.output) => self.wrote(written)?,
                    () = self.signal.0.notified() => self.collect_pushes()?,
                    got = reader.read_buf(&mut self.input), if room => match got? {
                        0 => ended = true,
                        _ => unrun = true,
                    },
                }
            }
            if ended {
                // The client left: what it sent before runs, as Redis runs it on arrival.
                self.write_blocked = true;
                self.step();
                self.write_blocked = false;
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.take_overflow();
        }
    }

    /// Appends the pushes collected during a blocked write to the output.
    fn take_overflow(&mut self) {
        if !self.overflow.is_empty() {
            self.output.extend_from_slice(&self.overflow);
            self.overflow.clear();
        }
    }

    /// Writes the output. Pushes that arrive meanwhile are collected (up to the client's output
    /// limit) so the engine's outbox does not grow behind a slow reader.
    async fn flush<IO>(&mut self, io: &mut IO) -> std::io::Result<()>
    where
        IO: AsyncWrite + Unpin,
    {
        while !self.output.is_empty() {
            tokio::select! {
                biased;
                written = io.write(&self.output) => self.wrote(written)?,
                () = self.signal.0.notified() => self.collect_pushes()?,
            }
            self.take_overflow();
        }
        io.flush().await
    }

    /// While a write is blocked: takes the queued pushes into `overflow`, or gives up on a client
    /// that is too far behind.
    fn collect_pushes(&mut self) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        let Some(mut engine) = lock_unless_busy(&shared.engine, &shared.scripts) else {
            // A script pushed and runs on: its pushes wait for the next step.
            self.recheck = true;
            return Ok(());
        };
        if !engine.fault_plan().is_empty() || !engine.is_connected(self.client) {
            // Pushes under faults wait for the next step, where their fates are decided (and a
            // closed connection is noticed there).
            self.recheck = true;
            return Ok(());
        }
        let protocol = engine.protocol(self.client);
        while let Some(push) = engine.pop_outbox(self.client) {
            resp::encode(&push.frame, protocol, &mut self.overflow);
        }
        if self.past_output_limit(&engine) {
            return Err(std::io::Error::other("output buffer limit reached"));
        }
        engine.register_waker(self.client, &self.waker);
        Ok(())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if !self.registered {
            return;
        }
        let (shared, client, timer) = (Arc::clone(&self.shared), self.client, self.timer.take());
        let close = move |shared: &Shared, engine: &mut Engine| {
            if let Some(due) = timer {
                shared.clock.remove_timer(due, client);
            }
            let own = NodeId(client.0);
            let was_own_node = engine.node_of(client) == Some(own);
            engine.disconnect(client);
            // Its own node's sequence numbers go with it, unless `FAKE.NODE` put another
            // connection on the same node.
            if was_own_node && engine.clients_of_node(own) == 0 {
                engine.fault_plan_mut().forget_node(own);
            }
            tracing::debug!(%client, "disconnected");
        };
        if let Some(mut engine) = lock_unless_busy(&shared.engine, &shared.scripts) {
            return close(&shared, &mut engine);
        }
        // A script runs: the client is forgotten once it has ended, without a worker waiting.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    loop {
                        if let Some(mut engine) = lock_unless_busy(&shared.engine, &shared.scripts)
                        {
                            close(&shared, &mut engine);
                            break;
                        }
                        let busy = shared.scripts.busy().is_some();
                        shared.scripts.changed(busy).await;
                    }
                });
            }
            Err(_) => close(&shared, &mut lock(&shared.engine)),
        }
    }
}

/// What a connection does with a request while a script is busy.
enum Busy {
    /// Replies this (`BUSY`, or a kill's outcome).
    Reply(Frame),
    /// `QUIT`: `+OK`, then closes.
    Quit,
    /// `SHUTDOWN NOSAVE`: stops the server.
    Shutdown,
    /// Runs the request once the script has ended.
    AfterScript,
}

/// Commands Redis 7.0 allows while a script is busy (`allow_busy`) that need the engine, besides
/// those [`while_busy`] answers itself.
const ALLOWED_WHILE_BUSY: &[&[u8]] = &[
    b"auth",
    b"discard",
    b"hello",
    b"multi",
    b"replconf",
    b"reset",
    b"unwatch",
    b"watch",
];

/// A client's transaction as a busy script leaves it: the engine's, as of the client's last
/// step, and what the client did to it since.
struct BusyView<'a> {
    engine_multi: bool,
    done: &'a mut BusyTransaction,
}

impl BusyView<'_> {
    /// Whether a transaction is open.
    fn open(&self) -> bool {
        self.done.opened || self.engine_multi && !self.done.discarded
    }

    /// Drops the transaction, as `DISCARD` and a refused `EXEC` do.
    fn discard(&mut self) {
        *self.done = BusyTransaction {
            discarded: true,
            ..BusyTransaction::default()
        };
    }

    /// `BUSY` for a refused command, which dooms an open transaction.
    fn refuse(&mut self, kind: ScriptKind) -> Busy {
        if self.open() {
            self.done.flagged = true;
        }
        Busy::Reply(kind.busy_error())
    }
}

/// What Redis 7.0 does while busy with the commands of a transaction: `MULTI` and `DISCARD` run,
/// `EXEC` is refused and drops the transaction, `WATCH` inside one is an error. `None` for
/// every other command.
fn transaction_while_busy(kind: ScriptKind, argv: &[Bytes], tx: &mut BusyView<'_>) -> Option<Busy> {
    if argv.len() != 1 && !argv[0].eq_ignore_ascii_case(b"watch") {
        return None;
    }
    let name = argv[0].as_ref();
    let reply = if name.eq_ignore_ascii_case(b"multi") {
        if tx.open() {
            Frame::error("ERR MULTI calls can not be nested")
        } else {
            tx.done.opened = true;
            Frame::OK
        }
    } else if name.eq_ignore_ascii_case(b"discard") {
        if !tx.open() {
            return Some(Busy::Reply(Frame::error("ERR DISCARD without MULTI")));
        }
        tx.discard();
        Frame::OK
    } else if name.eq_ignore_ascii_case(b"exec") {
        tx.discard();
        Frame::error_owned(format!(
            "EXECABORT Transaction discarded because of: {}",
            kind.busy_text()
        ))
    } else if name.eq_ignore_ascii_case(b"watch") && argv.len() > 1 && tx.open() {
        Frame::error("ERR WATCH inside MULTI is not allowed")
    } else {
        return None;
    };
    Some(Busy::Reply(reply))
}

/// What Redis does with `argv` while a script of `kind` is busy. Redis checks a command's name
/// and arity first, so an unknown command or a wrong arity waits for the engine's error.
fn while_busy(
    kind: ScriptKind,
    argv: &[Bytes],
    watch: &ScriptWatch,
    tx: &mut BusyView<'_>,
) -> Busy {
    if let Some(busy) = transaction_while_busy(kind, argv, tx) {
        return busy;
    }
    let name = argv[0].as_ref();
    let sub = |word: &str| {
        argv.get(1)
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes()))
    };
    let killer = if name.eq_ignore_ascii_case(b"script") {
        Some(ScriptKind::Eval)
    } else if name.eq_ignore_ascii_case(b"function") {
        Some(ScriptKind::Function)
    } else {
        None
    };
    if let Some(killer) = killer {
        if sub("kill") && argv.len() == 2 {
            return Busy::Reply(watch.kill(killer).reply());
        }
        if killer == ScriptKind::Function && sub("stats") && argv.len() == 2 {
            // Redis answers it while a function runs; an EVAL's BUSY refuses it.
            if kind == ScriptKind::Function {
                return Busy::Reply(watch.function_stats());
            }
            return tx.refuse(kind);
        }
        if argv.len() < 2 || killer == ScriptKind::Function && sub("stats") {
            return Busy::AfterScript;
        }
        return tx.refuse(kind);
    }
    if name.eq_ignore_ascii_case(b"shutdown") {
        let nosave = argv[1..].iter().any(|a| a.eq_ignore_ascii_case(b"nosave"));
        return if nosave {
            Busy::Shutdown
        } else {
            tx.refuse(kind)
        };
    }
    if name.eq_ignore_ascii_case(b"quit") {
        return Busy::Quit;
    }
    if ALLOWED_WHILE_BUSY
        .iter()
        .any(|allowed| name.eq_ignore_ascii_case(allowed))
    {
        return Busy::AfterScript;
    }
    match crate::cmd::lookup(name) {
        Some(spec) if spec.arity_ok(argv.len()) => tx.refuse(kind),
        _ => Busy::AfterScript,
    }
}

/// Waits for `done`, reading on meanwhile (nothing read runs before the wait ends) up to
/// [`WAIT_READ_LIMIT`]: that notices a client that went away, so its connection does not linger
/// until a virtual clock that may never get there. False when the client left or the server
/// stops.
async fn read_while_waiting<IO>(
    input: &mut BytesMut,
    io: &mut IO,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
    done: impl std::future::Future<Output = ()>,
) -> bool
where
    IO: AsyncRead + Unpin,
{
    tokio::pin!(done);
    loop {
        let room = input.len() < WAIT_READ_LIMIT;
        if room {
            input.reserve(READ_CHUNK);
        }
        tokio::select! {
            biased;
            () = &mut done => return true,
            () = stopped(shutdown) => return false,
            read = io.read_buf(input), if room => match read {
                Ok(0) | Err(_) => return false,
                Ok(_) => {}
            },
        }
    }
}

/// When a client last active at `last_active` (ms) is closed as idle: Redis's clients cron
/// closes one whose last interaction, in whole seconds, is more than `timeout` seconds ago, and
/// never a subscriber (nor a blocked client, which waits on its own timeout, or a replica).
fn idle_deadline(engine: &Engine, client: ClientId, last_active: i64) -> Option<i64> {
    let timeout = i64::try_from(engine.config().idle_timeout_s).ok()?;
    if timeout == 0 || engine.is_subscriber(client) {
        return None;
    }
    let second = last_active
        .div_euclid(1000)
        .saturating_add(timeout)
        .saturating_add(1);
    Some(second.saturating_mul(1000))
}

/// `now + ms`, saturating.
fn after(now: i64, ms: u64) -> i64 {
    now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
}
