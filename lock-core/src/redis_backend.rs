//! The production backend: a real Redis through the `redis` crate.
//!
//! [`RedisBackend`] is generic over the command connection, any `redis::aio::ConnectionLike`: the
//! crate's reconnecting `ConnectionManager` in production, the fake's in-process connection in
//! tests, a cluster connection later. Pub/sub runs on a separate [`Subscriber`], by default a
//! [`RedisSubscriber`] on its own connection, which reconnects and resubscribes by itself.
//!
//! Every call is bounded by one response timeout as a whole, which the backend reports as its
//! [`Backend::call_timeout`] so the lock client adds no second timer; one that runs out is
//! [`BackendError::Unknown`], never "failed", since the server may have applied it. The lock's
//! retry rule counts on that bound (an attempt is answered within one response timeout, or
//! counts as unknown), so a call never gets a deadline per round trip; instead every call is **one
//! round trip**, so that any network whose round trip fits in the response timeout works:
//!
//! - scripts go out as `EVALSHA`, and the lock's scripts are loaded when the backend connects;
//!   after a call that met a broken connection (the connection manager reconnects behind it,
//!   perhaps to a restarted or failed-over server that has forgotten them) their `SCRIPT LOAD`s
//!   go out again in the same pipeline as the next `EVALSHA`, ahead of it. A `NOSCRIPT` all the
//!   same (a `SCRIPT FLUSH`) loads the body and tries again;
//! - a call that asks for the replica check goes out as a pipeline of the `EVALSHA` and its
//!   `WAIT` when the primary has replicas. How many it has (`INFO replication`'s
//!   `connected_slaves`) is asked when the backend connects, and again in the same pipeline,
//!   behind the script, once the answer is five seconds old (the call goes by the old answer).
//!   Only after a broken connection (perhaps to a new primary) is the count forgotten, and the
//!   next checked call asks it first;
//! - with [`SyncMode::Auto`] the wait is `WAITAOF 1 <replicas> <timeout>`
//!   when the primary's AOF is on, decided as Redisson decides it: `INFO`'s `aof_enabled:1`, and
//!   a server that accepts `WAITAOF` (asked once with `WAITAOF 0 0 0`, in the round trip of the
//!   first `INFO` such a call needs; it writes nothing and waits for nothing). The refresh behind
//!   a call then asks the whole default `INFO`, which has both the replicas and the AOF's state.
//!
//! A call whose reply did not come within the response timeout forgets nothing: the connection is
//! the same, and its reply, when it comes, is read and dropped in order. (Forgetting cost the next
//! call two more round trips, so on a slow network one timeout led to the next, and on a paused
//! server the unknown acquire's give-back waited behind an `INFO` and never went out.)

use crate::backend::{Backend, BackendError, PubSubEvent, Subscriber};
use crate::config::SyncMode;
use crate::reply::Reply;
use crate::script::{ReplicaAcks, ReplicaWait, ScriptCall};
use bytes::Bytes;
use futures_util::StreamExt;
use redis::aio::{ConnectionLike, ConnectionManager, PubSubSink, PubSubStream};
use redis::{ErrorKind, RedisError, ServerErrorKind, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Mutex, mpsc, oneshot};

/// A [`Backend`] on the `redis` crate.
pub struct RedisBackend<C = ConnectionManager, S = RedisSubscriber> {
    conn: C,
    subscriber: S,
    response_timeout: Duration,
    /// Whether the server is believed to hold the lock's scripts: cleared by a call that met a
    /// broken connection, set again by the load that goes out with the next script call.
    scripts_loaded: AtomicBool,
    /// What the primary said of itself when last asked, and when: the replica check waits for
    /// no replica where there are none. Forgotten with the scripts.
    replicas: std::sync::Mutex<Option<(tokio::time::Instant, Primary)>>,
}

/// The primary's replicas and AOF, as its `INFO` (and a `WAITAOF 0 0 0`) told them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Primary {
    /// `connected_slaves`.
    replicas: u32,
    /// `aof_enabled:1`; `None` when only `INFO replication` was asked.
    aof_enabled: Option<bool>,
    /// Whether the server accepted `WAITAOF 0 0 0`; `None` when not asked.
    waitaof: Option<bool>,
}

impl Primary {
    /// Whether a call in `mode` finds out all it needs here.
    fn knows_enough_for(&self, mode: SyncMode) -> bool {
        mode == SyncMode::Ack || (self.aof_enabled.is_some() && self.waitaof.is_some())
    }

    /// Whether a call in `mode` waits with `WAITAOF` (Redisson's rule, see [`SyncMode`]).
    fn waits_for_aof(&self, mode: SyncMode) -> bool {
        mode == SyncMode::Auto && self.aof_enabled == Some(true) && self.waitaof == Some(true)
    }

    /// What a later `INFO` said, over what this knew: `WAITAOF`'s presence does not change on
    /// the same connection, and `INFO replication` says nothing of the AOF.
    fn updated(self, seen: Primary) -> Primary {
        Primary {
            replicas: seen.replicas,
            aof_enabled: seen.aof_enabled.or(self.aof_enabled),
            waitaof: seen.waitaof.or(self.waitaof),
        }
    }
}

/// The command after a checked call's script, and how to read its reply.
#[derive(Clone, Copy, Debug)]
struct SyncWait {
    wait: ReplicaWait,
    /// `WAITAOF` rather than `WAIT`.
    aof: bool,
}

impl SyncWait {
    fn argv(&self) -> Vec<Bytes> {
        if self.aof {
            self.wait.aof_argv()
        } else {
            self.wait.argv()
        }
    }
}

/// How long a primary's replica count is trusted before it is asked again: a replica that attaches
/// later is waited for from then on.
pub(crate) const REPLICA_COUNT_TTL: Duration = Duration::from_secs(5);

/// Why [`RedisBackend::connect`] could not make a backend, or [`LockClient::connect`] a client.
///
/// [`LockClient::connect`]: crate::LockClient::connect
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The backend connected, and the client refused to start on it (an unsafe configuration,
    /// or no tokio runtime). A configuration is checked before anything connects.
    #[error(transparent)]
    Client(#[from] crate::client::ClientError),
    /// The URL is not one the `redis` crate accepts.
    #[error("invalid Redis URL {url:?}: {source}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What the `redis` crate said.
        source: RedisError,
    },
    /// The server could not be reached (or refused the credentials).
    #[error(
        "cannot connect to Redis at {url:?}: {source}; is the server running and the URL right?"
    )]
    Unreachable {
        /// The URL given.
        url: String,
        /// What the `redis` crate said.
        source: RedisError,
    },
}

impl RedisBackend {
    /// Connects to the server at `url` (any URL the `redis` crate accepts: `redis://`,
    /// `rediss://` with the `tls` feature, a password, a database number), with a
    /// reconnecting command connection and a dedicated subscriber connection.
    pub async fn connect(
        url: &str,
        response_timeout: Duration,
    ) -> Result<RedisBackend, ConnectError> {
        let client = redis::Client::open(url).map_err(|source| ConnectError::InvalidUrl {
            url: url.to_owned(),
            source,
        })?;
        let unreachable = |source| ConnectError::Unreachable {
            url: url.to_owned(),
            source,
        };
        let config = redis::aio::ConnectionManagerConfig::new()
            // Our own timeout bounds each call; the manager's would turn slow replies into errors
            // we could not tell apart.
            .set_response_timeout(None)
            .set_connection_timeout(Some(response_timeout))
            .set_number_of_retries(2);
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(unreachable)?;
        let subscriber = RedisSubscriber::connect(client)
            .await
            .map_err(unreachable)?;
        let backend = RedisBackend::new(conn, subscriber, response_timeout);
        // Best effort: what this does not learn, the first calls learn (a round trip each).
        let _ = tokio::time::timeout(response_timeout, backend.preload()).await;
        Ok(backend)
    }
}

impl<C, S> RedisBackend<C, S> {
    /// A backend over an existing command connection and subscriber.
    pub fn new(conn: C, subscriber: S, response_timeout: Duration) -> RedisBackend<C, S> {
        RedisBackend {
            conn,
            subscriber,
            response_timeout,
            scripts_loaded: AtomicBool::new(false),
            replicas: std::sync::Mutex::new(None),
        }
    }

    /// The bound on every call.
    pub fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    /// The subscriber.
    pub fn subscriber(&self) -> &S {
        &self.subscriber
    }
}

impl<C, S> RedisBackend<C, S>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// `work` within the response timeout from now.
    async fn bounded<T>(
        &self,
        work: impl Future<Output = Result<T, RedisError>>,
    ) -> Result<T, BackendError> {
        self.bounded_until(self.deadline(), work).await
    }

    /// The end of a call's response timeout, if it starts now.
    fn deadline(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.response_timeout
    }

    /// `work` by `deadline`: the end of one call's response timeout, which its parts (the replica
    /// count, then the script) share.
    async fn bounded_until<T>(
        &self,
        deadline: tokio::time::Instant,
        work: impl Future<Output = Result<T, RedisError>>,
    ) -> Result<T, BackendError> {
        let result = match tokio::time::timeout_at(deadline, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(classify(&err)),
            // No reply yet, on the same connection: nothing to forget (see the module docs).
            Err(_) => {
                return Err(BackendError::Unknown(format!(
                    "no reply within the response timeout of {} ms",
                    self.response_timeout.as_millis()
                )));
            }
        };
        if matches!(
            result,
            Err(BackendError::NotApplied(_) | BackendError::Unknown(_))
        ) {
            // The connection may be replaced, perhaps by one to a server that lost its scripts,
            // or by one to another primary (a failover) with other replicas.
            self.scripts_loaded.store(false, Ordering::Relaxed);
            *lock_ignoring_poison(&self.replicas) = None;
        }
        result
    }

    /// `EVALSHA` of `call`, loading the script on `NOSCRIPT`.
    pub(crate) async fn eval_script(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        self.eval_script_until(call, self.deadline()).await
    }

    async fn eval_script_until(
        &self,
        call: &ScriptCall,
        deadline: tokio::time::Instant,
    ) -> Result<Reply, BackendError> {
        self.run_script(call, None, None, deadline)
            .await
            .map(|trip| to_reply(trip.script))
    }

    /// One round trip of `call`: behind the scripts' loads when the server may not hold them,
    /// with `wait` after it and `INFO replication` last when `refresh`; a `NOSCRIPT` loads the
    /// script and sends it again. By `deadline`.
    async fn run_script(
        &self,
        call: &ScriptCall,
        wait: Option<SyncWait>,
        refresh: Option<InfoAsk>,
        deadline: tokio::time::Instant,
    ) -> Result<Trip, BackendError> {
        let trip = self
            .bounded_until(deadline, async {
                let load = !self.scripts_loaded.load(Ordering::Relaxed);
                let sent = one_trip(&self.conn, call, load, wait, refresh).await;
                // A reply of any kind, an error reply included, came behind the loads.
                let answered = sent.as_ref().map_or_else(|e| e.code().is_some(), |_| true);
                if load && answered {
                    self.scripts_loaded.store(true, Ordering::Relaxed);
                }
                match sent {
                    Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                        tracing::debug!(script = call.script.name, "NOSCRIPT: loading the script");
                        query(&self.conn, &call.script.load_argv()).await?;
                        one_trip(&self.conn, call, false, wait, refresh).await
                    }
                    other => other,
                }
            })
            .await?;
        if let Some(seen) = trip.primary {
            let mut known = lock_ignoring_poison(&self.replicas);
            let before = known.map(|(_, primary)| primary).unwrap_or_default();
            *known = Some((tokio::time::Instant::now(), before.updated(seen)));
        }
        Ok(trip)
    }

    /// `EVALSHA` of `call` with `WAIT` behind it in one round trip, when the primary has
    /// `connected` replicas (none: the script alone, nothing to wait for). A `NOSCRIPT` loads the
    /// script and sends both again.
    #[cfg(feature = "cluster")]
    pub(crate) async fn eval_with_wait(
        &self,
        call: &ScriptCall,
        wait: ReplicaWait,
        connected: u32,
    ) -> Result<(Reply, ReplicaAcks), BackendError> {
        self.eval_with_wait_until(call, wait, connected, self.deadline())
            .await
    }

    #[cfg(feature = "cluster")]
    async fn eval_with_wait_until(
        &self,
        call: &ScriptCall,
        wait: ReplicaWait,
        connected: u32,
        deadline: tokio::time::Instant,
    ) -> Result<(Reply, ReplicaAcks), BackendError> {
        if connected == 0 {
            let reply = self.eval_script_until(call, deadline).await?;
            return Ok((
                reply,
                ReplicaAcks {
                    acked: 0,
                    connected,
                },
            ));
        }
        // A cluster's primaries are not asked for their AOF: `WAIT` (see `SyncMode`).
        let wait = SyncWait { wait, aof: false };
        let trip = self.run_script(call, Some(wait), None, deadline).await?;
        let acked = trip.acked.unwrap_or(0);
        Ok((to_reply(trip.script), ReplicaAcks { acked, connected }))
    }

    /// What the primary said of itself (enough for a call in `mode`), and whether the answer is
    /// old enough to be asked again behind the call that goes by it (after
    /// [`REPLICA_COUNT_TTL`]). Never asked, or not enough (or forgotten after a broken
    /// connection): asked first, by `deadline`.
    async fn primary(
        &self,
        mode: SyncMode,
        deadline: tokio::time::Instant,
    ) -> Result<(Primary, bool), BackendError> {
        if let Some((at, known)) = *lock_ignoring_poison(&self.replicas)
            && known.knows_enough_for(mode)
        {
            return Ok((known, at.elapsed() >= REPLICA_COUNT_TTL));
        }
        let seen = match mode {
            SyncMode::Ack => {
                let argv = [
                    Bytes::from_static(b"INFO"),
                    Bytes::from_static(b"replication"),
                ];
                let info = self
                    .bounded_until(deadline, query(&self.conn, &argv))
                    .await?;
                InfoAsk::Replication.read(&info)
            }
            SyncMode::Auto => self.bounded_until(deadline, ask_aof(&self.conn)).await?,
        };
        let mut known = lock_ignoring_poison(&self.replicas);
        let before = known.map(|(_, primary)| primary).unwrap_or_default();
        let now = before.updated(seen);
        *known = Some((tokio::time::Instant::now(), now));
        Ok((now, false))
    }

    /// `SCRIPT LOAD` of every lock script and `INFO replication`, in one round trip: what a call
    /// would otherwise ask first.
    async fn preload(&self) -> Result<(), RedisError> {
        let mut pipe = redis::pipe();
        for script in crate::script::all() {
            pipe.add_command(cmd_of(&script.load_argv())).ignore();
        }
        pipe.cmd("INFO").arg("replication");
        let (info,): (Value,) = pipe.query_async(&mut self.conn.clone()).await?;
        self.scripts_loaded.store(true, Ordering::Relaxed);
        let seen = InfoAsk::Replication.read(&info);
        *lock_ignoring_poison(&self.replicas) = Some((tokio::time::Instant::now(), seen));
        Ok(())
    }
}

/// `INFO` (its default sections, replication and persistence among them) and `WAITAOF 0 0 0`, in
/// one round trip: all that [`SyncMode::Auto`] decides by. A server without `WAITAOF` answers it
/// with an error, which says just that.
async fn ask_aof<C: ConnectionLike + Clone>(conn: &C) -> Result<Primary, RedisError> {
    let mut pipe = redis::pipe();
    pipe.cmd("INFO").cmd("WAITAOF").arg(0).arg(0).arg(0);
    let replies: Vec<Value> = pipe.ignore_errors().query_async(&mut conn.clone()).await?;
    let mut replies = replies.into_iter();
    let info = match replies.next() {
        Some(Value::ServerError(e)) => return Err(e.into()),
        Some(info) => info,
        None => return Err(short_pipeline()),
    };
    let waitaof = !matches!(replies.next(), Some(Value::ServerError(_)) | None);
    Ok(Primary {
        waitaof: Some(waitaof),
        ..InfoAsk::Default.read(&info)
    })
}

/// Which `INFO` a refresh sends behind a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InfoAsk {
    /// `INFO replication`: the replicas only.
    Replication,
    /// `INFO`: the default sections, the replicas and the AOF's state among them.
    Default,
}

impl InfoAsk {
    fn for_mode(mode: SyncMode) -> InfoAsk {
        match mode {
            SyncMode::Ack => InfoAsk::Replication,
            SyncMode::Auto => InfoAsk::Default,
        }
    }

    fn add_to(self, pipe: &mut redis::Pipeline) {
        match self {
            InfoAsk::Replication => pipe.cmd("INFO").arg("replication"),
            InfoAsk::Default => pipe.cmd("INFO"),
        };
    }

    /// What the reply says of the primary.
    fn read(self, info: &Value) -> Primary {
        let text = match info {
            Value::BulkString(text) => &text[..],
            Value::VerbatimString { text, .. } => text.as_bytes(),
            _ => &[],
        };
        Primary {
            replicas: info_field(text, "connected_slaves").unwrap_or(0),
            aof_enabled: match self {
                InfoAsk::Replication => None,
                InfoAsk::Default => Some(info_field::<u8>(text, "aof_enabled") == Some(1)),
            },
            waitaof: None,
        }
    }
}

/// What one round trip of a script call brought back.
struct Trip {
    /// The script's reply.
    script: Value,
    /// The count of `WAIT` (or of `WAITAOF`'s replicas), when it was sent.
    acked: Option<u32>,
    /// What the `INFO` behind it said, when it was sent.
    primary: Option<Primary>,
}

/// The script call in one pipeline: the scripts' loads ahead of it when `load`, its `WAIT` (or
/// `WAITAOF`) after it when `wait`, and `info` last.
async fn one_trip<C: ConnectionLike + Clone>(
    conn: &C,
    call: &ScriptCall,
    load: bool,
    wait: Option<SyncWait>,
    info: Option<InfoAsk>,
) -> Result<Trip, RedisError> {
    if !load && info.is_none() {
        return match wait {
            None => Ok(Trip {
                script: query(conn, &call.evalsha_argv()).await?,
                acked: None,
                primary: None,
            }),
            Some(wait) => {
                let (script, acked) = pipeline_with(conn, call, wait).await?;
                Ok(Trip {
                    script,
                    acked: Some(acked),
                    primary: None,
                })
            }
        };
    }
    let mut pipe = redis::pipe();
    if load {
        for script in crate::script::all() {
            pipe.add_command(cmd_of(&script.load_argv())).ignore();
        }
    }
    pipe.add_command(cmd_of(&call.evalsha_argv()));
    if let Some(wait) = wait {
        pipe.add_command(cmd_of(&wait.argv()));
    }
    if let Some(info) = info {
        info.add_to(&mut pipe);
    }
    let replies: Vec<Value> = pipe.ignore_errors().query_async(&mut conn.clone()).await?;
    let mut replies = replies.into_iter();
    let script = match replies.next() {
        Some(Value::ServerError(e)) => return Err(e.into()),
        Some(script) => script,
        None => return Err(short_pipeline()),
    };
    let acked = match wait {
        Some(wait) => Some(wait.count(replies.next().ok_or_else(short_pipeline)?)?),
        None => None,
    };
    let primary = match info {
        Some(info) => Some(info.read(&replies.next().ok_or_else(short_pipeline)?)),
        None => None,
    };
    Ok(Trip {
        script,
        acked,
        primary,
    })
}

fn short_pipeline() -> RedisError {
    RedisError::from((
        ErrorKind::Parse,
        "a pipeline answered fewer replies than it sent commands",
    ))
}

/// `WAIT`'s reply: how many replicas acknowledged.
fn wait_count(reply: Value) -> Result<u32, RedisError> {
    match reply {
        Value::Int(n) => Ok(u32::try_from(n).unwrap_or(0)),
        Value::ServerError(e) => Err(e.into()),
        other => Err(RedisError::from((
            ErrorKind::Parse,
            "WAIT answered something other than an integer",
            format!("{other:?}"),
        ))),
    }
}

/// The script call and its `WAIT` or `WAITAOF` in one round trip: the script's reply and how
/// many replicas acknowledged.
async fn pipeline_with<C: ConnectionLike + Clone>(
    conn: &C,
    call: &ScriptCall,
    wait: SyncWait,
) -> Result<(Value, u32), RedisError> {
    let mut pipe = redis::pipe();
    pipe.add_command(cmd_of(&call.evalsha_argv()))
        .add_command(cmd_of(&wait.argv()))
        .ignore_errors();
    let replies: Vec<Value> = pipe.query_async(&mut conn.clone()).await?;
    let mut replies = replies.into_iter();
    let (Some(script), Some(acked)) = (replies.next(), replies.next()) else {
        return Err(RedisError::from((
            ErrorKind::Parse,
            "a pipeline of two commands answered fewer than two replies",
        )));
    };
    if let Value::ServerError(e) = script {
        return Err(e.into());
    }
    let acked = wait.count(acked)?;
    Ok((script, acked))
}

impl SyncWait {
    /// How many replicas acknowledged: `WAIT`'s reply, or the second count of `WAITAOF`'s
    /// (`[local, replicas]`), which Redisson reads as the synced replicas.
    fn count(&self, reply: Value) -> Result<u32, RedisError> {
        if !self.aof {
            return wait_count(reply);
        }
        match reply {
            Value::Array(counts) if counts.len() == 2 => wait_count(counts[1].clone()),
            Value::ServerError(e) => Err(e.into()),
            other => Err(RedisError::from((
                ErrorKind::Parse,
                "WAITAOF answered something other than two counts",
                format!("{other:?}"),
            ))),
        }
    }
}

/// The value of `<name>:<value>` in an `INFO` reply.
fn info_field<T: std::str::FromStr>(text: &[u8], name: &str) -> Option<T> {
    std::str::from_utf8(text)
        .ok()?
        .lines()
        .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
        .and_then(|n| n.parse().ok())
}

/// The guarded value is plain data that no panic can leave half-written.
fn lock_ignoring_poison<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `argv` as a `redis` crate command, byte for byte (`argv[0]` is the command's name).
pub fn cmd_of(argv: &[Bytes]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for a in argv {
        cmd.arg(&a[..]);
    }
    cmd
}

async fn query<C: ConnectionLike + Clone>(conn: &C, argv: &[Bytes]) -> Result<Value, RedisError> {
    cmd_of(argv).query_async(&mut conn.clone()).await
}

impl<C, S> Backend for RedisBackend<C, S>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
    S: Subscriber,
{
    async fn eval_synced(
        &self,
        call: &ScriptCall,
    ) -> Result<(Reply, Option<ReplicaAcks>), BackendError> {
        let Some(wait) = call.sync else {
            return self.eval(call).await.map(|reply| (reply, None));
        };
        // One response timeout for the whole call, the replica count's round trip included, as
        // `call_timeout` promises.
        let deadline = self.deadline();
        let (primary, refresh) = self.primary(wait.mode, deadline).await?;
        let connected = primary.replicas;
        // Redisson's batch adds its wait only when there are replicas to wait for, the AOF form
        // too: a primary alone goes unchecked.
        let sync = SyncWait {
            wait,
            aof: primary.waits_for_aof(wait.mode),
        };
        let refresh = refresh.then(|| InfoAsk::for_mode(wait.mode));
        let trip = self
            .run_script(call, (connected > 0).then_some(sync), refresh, deadline)
            .await?;
        let acked = trip.acked.unwrap_or(0);
        let acks = ReplicaAcks { acked, connected };
        Ok((to_reply(trip.script), Some(acks)))
    }

    async fn eval(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        self.eval_script(call).await
    }

    /// Every `eval`, `eval_synced` and `command` ends within one response timeout: the script
    /// load before it, a `NOSCRIPT` reload and the replica count's `INFO` included.
    fn call_timeout(&self) -> Option<Duration> {
        Some(self.response_timeout)
    }

    async fn command(&self, argv: &[Bytes]) -> Result<Reply, BackendError> {
        if argv.is_empty() {
            return Err(BackendError::NotApplied("an empty command".into()));
        }
        self.bounded(query(&self.conn, argv)).await.map(to_reply)
    }

    crate::backend::forward_pubsub_to!(subscriber);
}

/// The error codes with which a server refuses a command before running any of it: a cluster
/// redirection or a slot it cannot serve now, a replica or a loading server, a primary without
/// enough replicas. The command may be sent again (to the right server) with no further thought.
const REFUSED_UNRUN: [&str; 8] = [
    "MOVED",
    "ASK",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "READONLY",
    "LOADING",
    "MASTERDOWN",
    "NOREPLICAS",
];

/// Maps a `redis` crate error to what it tells about the call's outcome.
pub fn classify(err: &RedisError) -> BackendError {
    if let Some(code) = err.code() {
        if REFUSED_UNRUN.contains(&code) {
            return BackendError::NotApplied(match err.detail() {
                Some(detail) => format!("{code} {detail}"),
                None => code.to_owned(),
            });
        }
        return BackendError::Server(match err.detail() {
            Some(detail) => format!("{code} {detail}"),
            None => code.to_owned(),
        });
    }
    if err.is_connection_refusal() {
        return BackendError::NotApplied(err.to_string());
    }
    BackendError::Unknown(err.to_string())
}

/// Converts a `redis` crate value to a [`Reply`].
pub fn to_reply(value: Value) -> Reply {
    match value {
        Value::Nil => Reply::Nil,
        Value::Int(n) => Reply::Int(n),
        Value::BulkString(b) => Reply::Bulk(Bytes::from(b)),
        Value::Array(items) | Value::Set(items) => {
            Reply::Array(items.into_iter().map(to_reply).collect())
        }
        Value::SimpleString(s) => Reply::Status(s),
        Value::Okay => Reply::Status("OK".into()),
        Value::Map(pairs) => Reply::Array(
            pairs
                .into_iter()
                .flat_map(|(k, v)| [to_reply(k), to_reply(v)])
                .collect(),
        ),
        Value::Attribute { data, .. } => to_reply(*data),
        Value::Double(d) => Reply::Bulk(Bytes::from(d.to_string())),
        Value::Boolean(b) => Reply::Int(i64::from(b)),
        Value::VerbatimString { text, .. } => Reply::Bulk(Bytes::from(text)),
        Value::ServerError(e) => Reply::Error(match e.details() {
            Some(detail) => format!("{} {detail}", e.code()),
            None => e.code().to_owned(),
        }),
        other => Reply::Bulk(Bytes::from(format!("{other:?}"))),
    }
}

/// A [`Subscriber`] on a dedicated pub/sub connection that reconnects and resubscribes by itself.
///
/// A task owns the connection. When it drops, the task reports
/// [`PubSubEvent::SubscriptionLost`], retries with a growing delay (up to 1 s), subscribes every
/// channel again and reports [`PubSubEvent::SubscriptionRestored`].
pub struct RedisSubscriber {
    task: SubscriberTask,
}

/// What a subscriber's task is asked to do, each with the channel for its answer.
pub(crate) enum SubCommand {
    Subscribe(Bytes, oneshot::Sender<Result<(), BackendError>>),
    Unsubscribe(Bytes, oneshot::Sender<Result<(), BackendError>>),
}

/// The handle every subscriber of this crate is: a task that owns the connection, takes
/// [`SubCommand`]s and sends [`PubSubEvent`]s, and is stopped when the handle drops.
pub(crate) struct SubscriberTask {
    commands: mpsc::UnboundedSender<SubCommand>,
    events: Mutex<mpsc::UnboundedReceiver<PubSubEvent>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SubscriberTask {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SubscriberTask {
    /// Spawns `run` with the receiving end of the commands and the sending end of the events.
    pub(crate) fn spawn<F>(
        run: impl FnOnce(mpsc::UnboundedReceiver<SubCommand>, mpsc::UnboundedSender<PubSubEvent>) -> F,
    ) -> SubscriberTask
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (event_tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(command_rx, event_tx));
        SubscriberTask {
            commands,
            events: Mutex::new(events),
            task,
        }
    }

    async fn request(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<(), BackendError>>) -> SubCommand,
    ) -> Result<(), BackendError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(make(tx))
            .map_err(|_| BackendError::NotApplied("the subscriber task has stopped".into()))?;
        rx.await
            .unwrap_or_else(|_| Err(BackendError::Unknown("the subscriber task stopped".into())))
    }
}

impl Subscriber for SubscriberTask {
    async fn subscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        self.request(|tx| SubCommand::Subscribe(channel.clone(), tx))
            .await
    }

    async fn unsubscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        self.request(|tx| SubCommand::Unsubscribe(channel.clone(), tx))
            .await
    }

    async fn next_event(&self) -> PubSubEvent {
        let mut events = self.events.lock().await;
        match events.recv().await {
            Some(event) => event,
            None => std::future::pending().await,
        }
    }
}

impl RedisSubscriber {
    /// Opens the pub/sub connection (it must succeed once) and starts its task.
    pub async fn connect(client: redis::Client) -> Result<RedisSubscriber, RedisError> {
        RedisSubscriber::connect_to(ClientSource::Fixed(vec![client])).await
    }

    /// Like [`connect`](Self::connect), but each (re)connection goes to the next server of
    /// `source` that answers: any node of a cluster, or the primary a Sentinel names now.
    pub(crate) async fn connect_to(
        mut source: ClientSource,
    ) -> Result<RedisSubscriber, RedisError> {
        let (sink, stream) = source.open().await?;
        let task = SubscriberTask::spawn(|commands, events| {
            run_subscriber(source, Some((sink, stream)), commands, events)
        });
        Ok(RedisSubscriber { task })
    }
}

/// Implements [`Subscriber`] for a type whose field `task` is its [`SubscriberTask`].
macro_rules! subscriber_by_task {
    ($subscriber:ty) => {
        impl $crate::backend::Subscriber for $subscriber {
            async fn subscribe(
                &self,
                channel: &::bytes::Bytes,
            ) -> Result<(), $crate::backend::BackendError> {
                $crate::backend::Subscriber::subscribe(&self.task, channel).await
            }

            async fn unsubscribe(
                &self,
                channel: &::bytes::Bytes,
            ) -> Result<(), $crate::backend::BackendError> {
                $crate::backend::Subscriber::unsubscribe(&self.task, channel).await
            }

            async fn next_event(&self) -> $crate::backend::PubSubEvent {
                $crate::backend::Subscriber::next_event(&self.task).await
            }
        }
    };
}
// Used by the cluster's subscriber too.
#[cfg_attr(not(feature = "cluster"), allow(unused_imports))]
pub(crate) use subscriber_by_task;

subscriber_by_task!(RedisSubscriber);

async fn run_subscriber(
    mut source: ClientSource,
    mut conn: Option<(PubSubSink, PubSubStream)>,
    mut commands: mpsc::UnboundedReceiver<SubCommand>,
    events: mpsc::UnboundedSender<PubSubEvent>,
) {
    let mut channels: BTreeSet<Bytes> = BTreeSet::new();
    let mut backoff = Duration::from_millis(50);
    loop {
        match &mut conn {
            Some((sink, stream)) => {
                tokio::select! {
                    command = commands.recv() => {
                        let Some(command) = command else { return };
                        let (ack, result) = match command {
                            SubCommand::Subscribe(ch, ack) => {
                                channels.insert(ch.clone());
                                (ack, sink.subscribe(&ch[..]).await)
                            }
                            SubCommand::Unsubscribe(ch, ack) => {
                                channels.remove(&ch);
                                (ack, sink.unsubscribe(&ch[..]).await)
                            }
                        };
                        let _ = ack.send(result.map_err(|e| classify(&e)));
                    }
                    message = stream.next() => match message {
                        Some(msg) => {
                            let _ = events.send(PubSubEvent::Message {
                                channel: Bytes::copy_from_slice(msg.get_channel_name().as_bytes()),
                                payload: Bytes::copy_from_slice(msg.get_payload_bytes()),
                            });
                        }
                        None => {
                            tracing::warn!("pub/sub connection lost; reconnecting");
                            conn = None;
                            backoff = Duration::from_millis(50);
                            let _ = events.send(PubSubEvent::SubscriptionLost);
                        }
                    },
                }
            }
            None => {
                tokio::select! {
                    command = commands.recv() => {
                        let Some(command) = command else { return };
                        // Remembered, and subscribed when the connection is back.
                        let ack = match command {
                            SubCommand::Subscribe(ch, ack) => { channels.insert(ch); ack }
                            SubCommand::Unsubscribe(ch, ack) => { channels.remove(&ch); ack }
                        };
                        let _ = ack.send(Ok(()));
                    }
                    () = tokio::time::sleep(backoff) => {
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                        if let Some(restored) = reconnect(&mut source, &channels).await {
                            conn = Some(restored);
                            tracing::info!("pub/sub connection restored");
                            let _ = events.send(PubSubEvent::SubscriptionRestored);
                        }
                    }
                }
            }
        }
    }
}

async fn reconnect(
    source: &mut ClientSource,
    channels: &BTreeSet<Bytes>,
) -> Option<(PubSubSink, PubSubStream)> {
    let (mut sink, stream) = source.open().await.ok()?;
    for ch in channels {
        sink.subscribe(&ch[..]).await.ok()?;
    }
    Some((sink, stream))
}

/// Where a [`RedisSubscriber`] (re)connects.
///
/// A message published on any node of a cluster (plain `PUBLISH`) reaches subscribers on every
/// node, and one published on a Sentinel-watched primary reaches its replicas too; so after a lost
/// connection any server that answers will do, tried in turn.
pub(crate) enum ClientSource {
    /// These servers, starting after the one that answered last.
    Fixed(Vec<redis::Client>),
    /// Whatever server the function names now (a Sentinel's current primary).
    #[cfg_attr(not(feature = "sentinel"), allow(dead_code))]
    Discover(
        Box<
            dyn FnMut()
                    -> futures_util::future::BoxFuture<'static, Result<redis::Client, RedisError>>
                + Send,
        >,
    ),
}

impl ClientSource {
    async fn open(&mut self) -> Result<(PubSubSink, PubSubStream), RedisError> {
        match self {
            ClientSource::Fixed(clients) => {
                let mut last = None;
                for _ in 0..clients.len() {
                    match clients[0].get_async_pubsub().await {
                        Ok(pubsub) => return Ok(pubsub.split()),
                        Err(e) => {
                            last = Some(e);
                            clients.rotate_left(1);
                        }
                    }
                }
                Err(last.unwrap_or_else(|| {
                    RedisError::from((ErrorKind::InvalidClientConfig, "no server to subscribe on"))
                }))
            }
            ClientSource::Discover(discover) => {
                let client = discover().await?;
                Ok(client.get_async_pubsub().await?.split())
            }
        }
    }
}
