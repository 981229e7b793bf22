//! The fake as a RESP2/RESP3 TCP server, so that tests in any language (and `redis-cli`) can use
//! it.
//!
//! The engine stays what it is in-process: synchronous, behind one std mutex that is never held
//! across an `.await` nor while writing to a socket. Each connection is a tokio task that reads
//! requests with the codec's [`RequestParser`](crate::resp::RequestParser) (Redis 7.0's limits and
//! protocol errors, byte for byte), runs every complete request it has under one lock of the
//! engine, encodes the replies for the client's protocol version, forwards the pub/sub pushes
//! the engine queued in its outbox, and only then writes. A client that does not read its replies
//! has the requests it sends run all the same, its output waiting up to its class's
//! `client-output-buffer-limit`, past which it is closed, as Redis closes it. The `FAKE.*` admin commands
//! ([`admin`]) read and move the clock, inject the engine's faults and read its event log.
//!
//! A runaway script holds the engine's lock for as long as it runs, and Redis stays responsive
//! meanwhile: past `busy-reply-threshold` (on the wall clock) other clients get `BUSY`, and
//! `SCRIPT KILL`, `FUNCTION KILL` and `SHUTDOWN NOSAVE` work. The fake keeps that without
//! serving clients from inside the script (Redis's `processEventsWhileBlocked`, which would
//! need the engine re-entered while it runs the script): the engine's
//! `ScriptWatch` sits beside the lock, every connection
//! looks at it (one atomic load) before it locks, and while a script runs a connection answers
//! from the watch alone, or waits for it asynchronously, never for the lock on a tokio worker.
//! The script's own thread stays blocked in the script, so once a script has run long (a few
//! milliseconds of Lua) its hook hands the thread's tokio worker over to a fresh thread
//! (`block_in_place`): on a multi-threaded runtime, even with one worker, the other connections
//! go on being served. On a current-thread runtime that cannot be done, and nothing else is
//! served until the script ends (on a virtual clock its instruction budget ends it).
//!
//! A [`ServerGroup`] serves several engines of one process, each on its own port, on one clock
//! and with one shutdown: `fake-redis-server --replicas <n>` is a primary, its replicas and a
//! Sentinel ([`ServerGroup::replicated`]), `--cluster <shards> --replicas <n>` every node of a
//! [`Cluster`] ([`ServerGroup::clustered`]), the ports bound together by [`bind_group`].
//!
//! [`Server`] is the server without a listener: [`Server::serve_connection`] serves any byte
//! stream (a socket, or `tokio::io::duplex` in tests). [`Server::start`] binds a TCP listener and
//! serves it in a task; [`Server::run`] does the same on the caller's task until a shutdown
//! future resolves (the `fake-redis-server` binary's `main`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), fake_redis::server::ServerError> {
//! use fake_redis::server::{ClockChoice, Server, ServerConfig};
//!
//! let config = ServerConfig {
//!     port: 0,
//!     clock: ClockChoice::Virtual { epoch_ms: fake_redis::DEFAULT_EPOCH_MS },
//!     ..ServerConfig::default()
//! };
//! let running = Server::start(config).await?;
//! println!("redis-cli -p {}", running.local_addr().port());
//! running.stop().await;
//! # Ok(())
//! # }
//! ```

pub mod admin;
mod connection;
mod limits;
mod time;

pub use limits::{OpenFiles, RESERVED_FDS, fit_open_files};
pub use time::ClockChoice;

use crate::engine::EngineConfig;
use crate::engine::client_limit::ClientLimit;
use crate::engine::cluster::Cluster;
use crate::engine::replication::{ReplicaLag, ServerNode, Topology};
use crate::engine::script_watch::{ScriptWatch, lock};
use crate::fault::NodeId;
use crate::inprocess::link::{SharedEngine, shared};
use bytes::Bytes;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use time::ServerClock;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The port a server listens on unless told otherwise (Redis's).
pub const DEFAULT_PORT: u16 = 6379;

/// Redis's default `maxclients`.
pub const DEFAULT_MAXCLIENTS: usize = crate::engine::client_limit::DEFAULT_MAXCLIENTS;

/// Redis's default `tcp-backlog`: how many connections the kernel completes and queues for the
/// server to accept (Linux caps it at `net.core.somaxconn`). A queue too short for a burst of
/// connections drops their handshakes, and each client retries a second later.
pub const DEFAULT_TCP_BACKLOG: u32 = 511;

/// How long the accept loop waits before trying again when `accept` fails (out of descriptors,
/// most likely), at first and at most: it doubles while the failures go on.
const ACCEPT_RETRY: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(100));

/// Redis's default `busy-reply-threshold` (`lua-time-limit`).
pub const DEFAULT_BUSY_REPLY_THRESHOLD: Duration = Duration::from_secs(5);

/// How long a graceful shutdown waits for open connections to close. Each closes at its next
/// step, a write blocked on a client that reads nothing included (Redis, too, closes such a client
/// on SIGTERM without writing what it has not read); the grace bounds a connection held elsewhere,
/// a busy script's.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How a server is set up.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The address to listen on (loopback by default: the fake has no business on a network).
    pub bind: IpAddr,
    /// The port; 0 picks a free one (see [`RunningServer::local_addr`]).
    pub port: u16,
    /// The clock the engine reads.
    pub clock: ClockChoice,
    /// Seeds the engine's active expiry sampling and the fault plan's random draws.
    pub seed: u64,
    /// Clients must `AUTH` with this password first (Redis's `requirepass`).
    pub requirepass: Option<Bytes>,
    /// Connections beyond this many are refused with `-ERR max number of clients reached`
    /// (`CONFIG SET maxclients` changes it).
    pub maxclients: usize,
    /// The most `CONFIG SET maxclients` may raise `maxclients` to: what the open-file limit
    /// allows ([`fit_open_files`] finds it; `None`: no bound).
    pub maxclients_ceiling: Option<usize>,
    /// The listen queue's length (Redis's `tcp-backlog`, which `CONFIG GET` shows).
    pub tcp_backlog: u32,
    /// The `FAKE.*` admin commands need `FAKE.AUTH <password>` first, on each connection. Without
    /// one they are open to every client of a loopback address, and refused on any other (see
    /// [`admin`]).
    pub admin_password: Option<Bytes>,
    /// How long a script runs (on the wall clock, `ClockChoice::System` only) before other
    /// clients get `BUSY` and may `SCRIPT KILL` it (Redis's `busy-reply-threshold`). On the
    /// virtual clock scripts are measured in Lua instructions instead, so that runs replay.
    pub busy_reply_threshold: Duration,
    /// The scripts the engines run as Rust functions in place of their Lua bodies
    /// ([`crate::native`]); none by default, as in the `fake-redis-server` binary.
    pub native_scripts: crate::native::NativeScripts,
    /// Redis's `enable-debug-command`: whether `DEBUG` runs (`no` by default, as in Redis 7.0).
    pub enable_debug_command: crate::engine::DebugCommand,
    /// The release the engines imitate (Redis 7.0 by default).
    pub version: crate::engine::Version,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            clock: ClockChoice::System,
            seed: EngineConfig::default().seed,
            requirepass: None,
            maxclients: DEFAULT_MAXCLIENTS,
            maxclients_ceiling: None,
            tcp_backlog: DEFAULT_TCP_BACKLOG,
            admin_password: None,
            busy_reply_threshold: DEFAULT_BUSY_REPLY_THRESHOLD,
            native_scripts: crate::native::NativeScripts::new(),
            enable_debug_command: crate::engine::DebugCommand::No,
            version: crate::engine::Version::V7_0,
        }
    }
}

/// How often an idle server on the wall clock does what the next command would do first (expire
/// keys and announce them, time out blocked clients): Redis's `serverCron` at its default `hz`.
const CRON_PERIOD: Duration = Duration::from_millis(100);

/// On the wall clock, time moves without a command: every [`CRON_PERIOD`] the engine catches up,
/// so a key that expires on an idle server is announced (`expired` keyspace events, tracking
/// invalidations) within about 100 ms, as Redis announces it. On a virtual clock `FAKE.ADVANCE`
/// catches the engine up; on tokio's, the next command does (a periodic timer would move a
/// paused runtime's clock in its own steps). Stops with the server.
async fn cron(shared: std::sync::Weak<Shared>) {
    let mut ticks = tokio::time::interval(CRON_PERIOD);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if *shared.shutdown.borrow() {
            return;
        }
        // A running script holds the engine: its own end catches up. A `DEBUG SLEEP` stops
        // the server's cron too.
        if let Some(mut engine) =
            crate::engine::script_watch::lock_unless_busy(&shared.engine, &shared.scripts)
            && shared
                .scripts
                .asleep_until()
                .is_none_or(|t| engine.now() >= t)
        {
            let _batch = shared.clock.batch();
            engine.catch_up();
        }
    }
}

/// Aborts a background task when dropped (the cron, when its server stops serving).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Why a server could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listening socket could not be bound: the port is taken, or the address is not one of
    /// this machine's. Pick another `--port` (0 picks a free one) or `--bind`.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The listener's address could not be read back.
    #[error("cannot read the listening address: {0}")]
    LocalAddr(std::io::Error),
}

/// What every connection of one server shares.
pub(crate) struct Shared {
    pub engine: SharedEngine,
    /// The engine's running script, read without its lock.
    pub scripts: Arc<ScriptWatch>,
    /// The process's one clock, shared by every server of a [`ServerGroup`].
    pub clock: Arc<ServerClock>,
    /// The other engines of the process (a group's other nodes), which `FAKE.ADVANCE` catches up
    /// as it moves the clock, each with its script watch.
    pub peers: Vec<(SharedEngine, Arc<ScriptWatch>)>,
    /// `maxclients`, shared with the engine's `CONFIG` and `INFO`.
    pub clients: Arc<ClientLimit>,
    pub requirepass: bool,
    /// Who may run the `FAKE.*` commands.
    pub admin: admin::AdminAccess,
    /// Open connections, for `maxclients`.
    pub connections: AtomicUsize,
    /// Turns `true` once when the server shuts down (every server of a group at once).
    pub shutdown: Arc<watch::Sender<bool>>,
}

/// A fake Redis server without a listener: an engine on the chosen clock, and the code that
/// serves one connection. Clones share the engine.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("connections", &self.connection_count())
            .finish_non_exhaustive()
    }
}

/// The engine settings a server's config asks for.
fn engine_config(config: &ServerConfig) -> EngineConfig {
    let mut settings = std::collections::BTreeMap::new();
    if config.tcp_backlog != DEFAULT_TCP_BACKLOG {
        settings.insert("tcp-backlog".to_owned(), config.tcp_backlog.to_string());
    }
    EngineConfig {
        seed: config.seed,
        requirepass: config.requirepass.clone(),
        busy_reply_threshold_ms: u64::try_from(config.busy_reply_threshold.as_millis())
            .unwrap_or(u64::MAX),
        maxclients: config.maxclients,
        maxclients_ceiling: config.maxclients_ceiling,
        settings,
        native_scripts: config.native_scripts.clone(),
        enable_debug_command: config.enable_debug_command,
        version: config.version,
        ..EngineConfig::default()
    }
}

/// The engines one process serves, on one clock, with one shutdown: what [`Server::new`] builds
/// for one engine and [`ServerGroup`] for a topology.
struct Process {
    clock: Arc<ServerClock>,
    shutdown: Arc<watch::Sender<bool>>,
    engines: Vec<(SharedEngine, Arc<ScriptWatch>)>,
}

impl Process {
    fn new(clock: Arc<ServerClock>, engines: Vec<SharedEngine>) -> Process {
        let engines = engines
            .into_iter()
            .map(|engine| {
                let scripts = lock(&engine).script_watch();
                (engine, scripts)
            })
            .collect();
        Process {
            clock,
            shutdown: Arc::new(watch::Sender::new(false)),
            engines,
        }
    }

    /// The server of engine `i`, set up by `config`.
    fn server(&self, config: &ServerConfig, i: usize) -> Server {
        let (engine, scripts) = self.engines[i].clone();
        let clients = Arc::clone(lock(&engine).client_limit());
        if config.clock == ClockChoice::System {
            scripts.measure_on_wall_clock(config.busy_reply_threshold);
        }
        scripts.set_detach(Box::new(hand_over_worker));
        let peers = (self.engines.iter().enumerate())
            .filter(|&(j, _)| j != i)
            .map(|(_, peer)| peer.clone())
            .collect();
        Server {
            shared: Arc::new(Shared {
                engine,
                scripts,
                clock: Arc::clone(&self.clock),
                peers,
                clients,
                requirepass: config.requirepass.is_some(),
                admin: admin::AdminAccess::new(config),
                connections: AtomicUsize::new(0),
                shutdown: Arc::clone(&self.shutdown),
            }),
        }
    }
}

impl Server {
    /// A server set up by `config` (its `bind` and `port` are used by [`Server::start`]).
    pub fn new(config: &ServerConfig) -> Server {
        let clock = Arc::new(ServerClock::new(config.clock));
        let engine = shared(clock.engine(engine_config(config)));
        let process = Process::new(clock, vec![engine]);
        process.server(config, 0)
    }
    /// The engine behind the server, for tests that look at (or set up) its state directly.
    pub fn engine(&self) -> &SharedEngine {
        &self.shared.engine
    }

    /// The number of connections being served.
    pub fn connection_count(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Serves one client connection until it closes, the client quits, a protocol error or a
    /// fault closes it, or the server shuts down. Over `maxclients`, replies
    /// `-ERR max number of clients reached` and closes, as Redis does.
    pub async fn serve_connection<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Send + Unpin,
    {
        connection::serve(Arc::clone(&self.shared), io, None).await;
    }

    /// [`Server::serve_connection`] for a connection that is `node` of the fault plan from its
    /// first command (as if it had sent `FAKE.NODE <node>` first, without the round trip).
    pub async fn serve_connection_as<IO>(&self, io: IO, node: NodeId)
    where
        IO: AsyncRead + AsyncWrite + Send + Unpin,
    {
        connection::serve(Arc::clone(&self.shared), io, Some(node)).await;
    }

    /// Moves a virtual clock forward to `target` (unix ms) as `FAKE.ADVANCE` does, stopping at
    /// every time something is due on the way; returns the time the clock reads then. Without a
    /// virtual clock nothing moves.
    pub async fn advance_to(&self, target: i64) -> i64 {
        admin::advance_to(&self.shared, target).await
    }

    /// Whether the server runs on a virtual clock (one only [`Server::advance_to`] moves).
    pub fn has_virtual_clock(&self) -> bool {
        self.shared.clock.manual().is_some()
    }

    /// Tells every connection to finish what it is writing and close, and the listener (if
    /// [`Server::run`] serves one) to stop accepting.
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }

    /// Binds `config`'s address and serves it in a background task until [`RunningServer::stop`].
    ///
    /// # Errors
    ///
    /// [`ServerError::Bind`] if the address cannot be bound.
    pub async fn start(config: ServerConfig) -> Result<RunningServer, ServerError> {
        let server = Server::new(&config);
        let listener = bind(&config).await?;
        let addr = listener.local_addr().map_err(ServerError::LocalAddr)?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn({
            let server = server.clone();
            async move {
                server
                    .run(listener, async {
                        let _ = stopped.await;
                    })
                    .await;
            }
        });
        Ok(RunningServer {
            addr,
            server,
            stop: Some(stop),
            task,
        })
    }

    /// Accepts connections on `listener` and serves each in its own task until `shutdown`
    /// resolves (or [`Server::shutdown`] is called); then stops accepting, closes every
    /// connection (replies a client has not read are dropped, as Redis drops them), and returns
    /// once they have closed (after at most [`SHUTDOWN_GRACE`]).
    pub async fn run(&self, listener: TcpListener, shutdown: impl Future<Output = ()>) {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "fake-redis-server ready to accept connections");
        }
        let mut connections = JoinSet::new();
        let mut stopping = self.shared.shutdown.subscribe();
        let mut failures = AcceptFailures::default();
        let _cron = (self.shared.clock.is_system())
            .then(|| AbortOnDrop(tokio::spawn(cron(Arc::downgrade(&self.shared))).abort_handle()));
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                () = stopped(&mut stopping) => break,
                accepted = listener.accept() => match accepted {
                    Ok((socket, peer)) => {
                        failures.ended();
                        // Redis disables Nagle too: replies are written whole, at once.
                        let _ = socket.set_nodelay(true);
                        tracing::debug!(%peer, "accepted");
                        let server = self.clone();
                        connections.spawn(async move {
                            server.serve_connection(socket).await;
                            tracing::debug!(%peer, "closed");
                        });
                    }
                    Err(e) => {
                        if let Some(wait) = failures.failed(&e) {
                            tokio::time::sleep(wait).await;
                        }
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        tracing::info!(
            open = connections.len(),
            "shutting down: closing connections"
        );
        self.shutdown();
        let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                left = connections.len(),
                "connections still open after the grace period; closing them"
            );
            connections.shutdown().await;
        }
        tracing::info!("fake-redis-server stopped");
    }
}

/// A run of failed `accept`s (out of descriptors, most likely: `maxclients` fitted to the limit
/// with [`fit_open_files`] keeps 32 spare, as Redis does, but other processes share the system's
/// table). Redis logs each failure and tries again on its next event-loop turn; the fake logs the
/// run once when it starts and once when it ends, and waits between tries, twice as long each
/// time up to a bound, so that it neither spins nor floods the log.
#[derive(Debug, Default)]
struct AcceptFailures {
    count: u64,
    wait: Duration,
}

impl AcceptFailures {
    /// Notes a failure; how long to wait before accepting again (`None`: at once, for a client
    /// that gave up before it was accepted).
    fn failed(&mut self, e: &std::io::Error) -> Option<Duration> {
        use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
        if matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted) {
            return None;
        }
        if self.count == 0 {
            tracing::warn!(error = %e, "Accepting client connection: retrying until it succeeds");
            self.wait = ACCEPT_RETRY.0;
        } else {
            self.wait = (self.wait * 2).min(ACCEPT_RETRY.1);
        }
        self.count += 1;
        Some(self.wait)
    }

    /// Notes an accepted connection: the run, if any, has ended.
    fn ended(&mut self) {
        if self.count > 0 {
            tracing::info!(failed = self.count, "accepting client connections again");
            self.count = 0;
        }
    }
}

/// Called by a long script's hook: on a multi-threaded tokio runtime, hands the worker the script
/// runs on over to a fresh thread, so that the other connections are served while the script
/// keeps this thread. `true` once a task spawned meanwhile has run elsewhere (the runtime goes
/// on without this thread); otherwise the hook tries again later.
fn hand_over_worker() -> bool {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let Ok(handle) = Handle::try_current() else {
        return false;
    };
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return false;
    }
    tokio::task::block_in_place(|| {
        let (ran, running) = std::sync::mpsc::channel();
        handle.spawn(async move {
            let _ = ran.send(());
        });
        running.recv_timeout(Duration::from_millis(100)).is_ok()
    })
}

/// Resolves once the server is shutting down.
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    // The value's guard is dropped here, not held across the caller's awaits.
    let _ = shutdown.wait_for(|&stop| stop).await;
}

/// Binds the listening socket `config` asks for, with its `tcp_backlog` (Redis's 511, where the
/// standard library and tokio ask for 128).
///
/// # Errors
///
/// [`ServerError::Bind`] if the address cannot be bound.
pub async fn bind(config: &ServerConfig) -> Result<TcpListener, ServerError> {
    let addr = SocketAddr::new(config.bind, config.port);
    let listen = || {
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        // A restarted server takes its port back at once, as Redis's listeners do.
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(config.tcp_backlog)
    };
    let listener = listen().map_err(|source| ServerError::Bind { addr, source })?;
    warn_if_capped(config.tcp_backlog);
    Ok(listener)
}

/// Logs, as Redis does, when the kernel caps the listen queue below `tcp_backlog`.
fn warn_if_capped(tcp_backlog: u32) {
    #[cfg(target_os = "linux")]
    {
        let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        if let Some(somaxconn) = somaxconn.filter(|&cap| cap < tcp_backlog) {
            tracing::warn!(
                "WARNING: The TCP backlog setting of {tcp_backlog} cannot be enforced because \
                 /proc/sys/net/core/somaxconn is set to the lower value of {somaxconn}."
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tcp_backlog;
}

/// A server serving a TCP listener in a background task (see [`Server::start`]).
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    server: Server,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    /// The address it listens on (with the real port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server, for its engine and connection count.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Shuts the server down gracefully and waits until it has.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        // Dropped without `stop`: stop accepting and close the connections in the background.
        if self.stop.is_some() {
            self.server.shutdown();
        }
    }
}

/// The servers of one process, each serving one engine on a port of its own, on one clock and
/// one seed, with one shutdown (a `SHUTDOWN` on any of them, or the group's, stops them all).
///
/// [`ServerGroup::replicated`] is `fake-redis-server --replicas <n>`: a primary, its replicas
/// and a Sentinel watching them, on consecutive ports; [`ServerGroup::clustered`] is
/// `--cluster <shards> --replicas <n>`: every node of a [`Cluster`], primaries first. The group
/// itself knows nothing of roles: it is a list of (engine, listener) pairs, served alike.
#[derive(Clone, Debug)]
pub struct ServerGroup {
    servers: Vec<Server>,
    /// The cluster whose nodes it serves, for its faults ([`ServerGroup::clustered`]).
    cluster: Option<Arc<Cluster>>,
}

/// What a [`ServerGroup::replicated`] or [`ServerGroup::clustered`] serves on each port, from
/// the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    /// A node of the topology (the primary, then the replicas by index; in a cluster, each
    /// shard's primary, then each shard's first replica, and so on).
    Node(ServerNode),
    /// The Sentinel watching them.
    Sentinel,
}

impl ServerGroup {
    /// A server for each engine, in order, set up by `config` and sharing `clock`.
    fn serving(config: &ServerConfig, clock: Arc<ServerClock>, engines: Vec<SharedEngine>) -> Self {
        let process = Process::new(clock, engines);
        let servers = (0..process.engines.len())
            .map(|i| process.server(config, i))
            .collect();
        ServerGroup {
            servers,
            cluster: None,
        }
    }

    /// A primary with `replicas` replicas lagging by `lag`, and a Sentinel watching the primary
    /// as `master_name`, to serve on consecutive ports from `base_port` (the primary's; what
    /// `ROLE`, `INFO replication` and the Sentinel announce, with `config.bind`, loopback for an
    /// unspecified address): the ports of
    /// [`ServerGroup::replicated_doors`]. `config`'s port is not read: bind with [`bind_group`].
    pub fn replicated(
        config: &ServerConfig,
        base_port: u16,
        replicas: u16,
        lag: ReplicaLag,
        master_name: &str,
    ) -> ServerGroup {
        let clock = Arc::new(ServerClock::new(config.clock));
        let primary = clock.engine(engine_config(config));
        let mut topology = Topology::with_replicas(primary, replicas, lag);
        topology.set_base_port(base_port);
        topology.set_announce_ip(config.bind);
        let sentinel = topology.sentinel(master_name);
        let mut engines: Vec<SharedEngine> = topology.nodes().map(|(_, e)| e.clone()).collect();
        engines.push(shared(sentinel));
        ServerGroup::serving(config, clock, engines)
    }

    /// What [`ServerGroup::replicated`] serves on each of its ports, in order.
    pub fn replicated_doors(replicas: u16) -> Vec<Door> {
        let mut doors = vec![Door::Node(ServerNode::PRIMARY)];
        doors.extend((0..replicas).map(|i| Door::Node(ServerNode::replica(i))));
        doors.push(Door::Sentinel);
        doors
    }

    /// A Redis Cluster of `shards` primaries with `replicas` replicas each, lagging by `lag`, to
    /// serve on consecutive ports from `base_port` in [`Cluster`]'s layout (as `redis-cli
    /// --cluster create` lays one out): the primaries of shards 0 … n − 1, then the first replica
    /// of each shard, then the second, and so on: [`ServerGroup::clustered_doors`]. Every node
    /// announces its port and `config.bind` (loopback for an unspecified address) in
    /// `CLUSTER SLOTS`, `NODES`, `SHARDS` and its redirections. `config`'s port is not read: bind
    /// with [`bind_group`].
    pub fn clustered(
        config: &ServerConfig,
        base_port: u16,
        shards: u16,
        replicas: u16,
        lag: ReplicaLag,
    ) -> ServerGroup {
        let clock = Arc::new(ServerClock::new(config.clock));
        let cluster = clock.cluster(engine_config(config), shards, replicas, lag, base_port);
        cluster.set_announce_ip(config.bind);
        let engines = cluster
            .nodes()
            .into_iter()
            .map(|(_, e)| e.clone())
            .collect();
        let mut group = ServerGroup::serving(config, clock, engines);
        group.cluster = Some(Arc::new(cluster));
        group
    }

    /// What [`ServerGroup::clustered`] serves on each of its ports, in order.
    pub fn clustered_doors(shards: u16, replicas: u16) -> Vec<Door> {
        let shards = shards.max(1);
        let mut doors: Vec<Door> = (0..shards)
            .map(|s| Door::Node(ServerNode::shard_primary(s)))
            .collect();
        for r in 0..replicas {
            doors.extend((0..shards).map(|s| Door::Node(ServerNode::shard_replica(s, r))));
        }
        doors
    }

    /// The cluster a [`ServerGroup::clustered`] serves, for its faults
    /// ([`Cluster::add_fault`]: a slot's migration, a shard's failover).
    pub fn cluster(&self) -> Option<&Cluster> {
        self.cluster.as_deref()
    }

    /// The servers, in port order.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// Serves each server on its listener (`listeners` in the servers' order) until `shutdown`
    /// resolves or a server shuts down; then every server stops as [`Server::run`] does.
    pub async fn run(&self, listeners: Vec<TcpListener>, shutdown: impl Future<Output = ()>) {
        let mut running = JoinSet::new();
        for (server, listener) in self.servers.iter().zip(listeners) {
            let server = server.clone();
            running.spawn(async move { server.run(listener, std::future::pending()).await });
        }
        let Some(first) = self.servers.first() else {
            return;
        };
        let mut stopping = first.shared.shutdown.subscribe();
        tokio::select! {
            biased;
            () = shutdown => {}
            () = stopped(&mut stopping) => {}
        }
        first.shutdown();
        while running.join_next().await.is_some() {}
    }

    /// [`ServerGroup::replicated`] on ports bound by [`bind_group`], served in a background task
    /// until [`RunningGroup::stop`].
    ///
    /// # Errors
    ///
    /// [`ServerError::Bind`] if the ports cannot be bound.
    pub async fn start_replicated(
        config: ServerConfig,
        replicas: u16,
        lag: ReplicaLag,
        master_name: &str,
    ) -> Result<RunningGroup, ServerError> {
        let count = usize::from(replicas) + 2;
        let listeners = bind_group(&config, count).await?;
        let base = first_port(&listeners)?;
        let group = ServerGroup::replicated(&config, base, replicas, lag, master_name);
        group.start(listeners)
    }

    /// [`ServerGroup::clustered`] on ports bound by [`bind_group`], served in a background task
    /// until [`RunningGroup::stop`].
    ///
    /// # Errors
    ///
    /// [`ServerError::Bind`] if the ports cannot be bound.
    pub async fn start_clustered(
        config: ServerConfig,
        shards: u16,
        replicas: u16,
        lag: ReplicaLag,
    ) -> Result<RunningGroup, ServerError> {
        let count = Self::clustered_doors(shards, replicas).len();
        let listeners = bind_group(&config, count).await?;
        let base = first_port(&listeners)?;
        let group = ServerGroup::clustered(&config, base, shards, replicas, lag);
        group.start(listeners)
    }

    /// Serves the group on `listeners` in a background task.
    fn start(self, listeners: Vec<TcpListener>) -> Result<RunningGroup, ServerError> {
        let addrs = (listeners.iter())
            .map(|l| l.local_addr().map_err(ServerError::LocalAddr))
            .collect::<Result<Vec<_>, _>>()?;
        let group = self;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn({
            let group = group.clone();
            async move {
                group
                    .run(listeners, async {
                        let _ = stopped.await;
                    })
                    .await;
            }
        });
        Ok(RunningGroup {
            addrs,
            group,
            stop: Some(stop),
            task,
        })
    }
}

/// The port of the first of `listeners` (the group's base port).
fn first_port(listeners: &[TcpListener]) -> Result<u16, ServerError> {
    let first = listeners
        .first()
        .ok_or_else(|| ServerError::LocalAddr(std::io::Error::other("no listener was bound")))?;
    Ok(first.local_addr().map_err(ServerError::LocalAddr)?.port())
}

/// Binds `count` consecutive ports from `config.port`, with its `tcp_backlog`. With port 0 it
/// looks for a free run of `count` ports below the system's ephemeral range, trying again
/// elsewhere when one of them is taken. (In the ephemeral range, the local port of an outgoing
/// connection, even one closed a minute ago and waiting in `TIME_WAIT`, keeps a listener off it,
/// and a busy machine holds thousands of them there.)
///
/// # Errors
///
/// [`ServerError::Bind`] for the first port that cannot be bound (with port 0: after 50 tries).
pub async fn bind_group(
    config: &ServerConfig,
    count: usize,
) -> Result<Vec<TcpListener>, ServerError> {
    let at = |port: u16| ServerConfig {
        port,
        ..config.clone()
    };
    let run_from = |first: TcpListener| async move {
        let base = first.local_addr().map_err(ServerError::LocalAddr)?.port();
        let mut listeners = vec![first];
        for i in 1..count {
            let port = u16::try_from(usize::from(base) + i).map_err(|_| ServerError::Bind {
                addr: SocketAddr::new(config.bind, base),
                source: std::io::Error::other("the ports after it run past 65535"),
            })?;
            listeners.push(bind(&at(port)).await?);
        }
        Ok::<_, ServerError>(listeners)
    };
    if config.port != 0 {
        return run_from(bind(config).await?).await;
    }
    let mut last = None;
    for attempt in 0..50 {
        // A port the system picks is a draw that differs from run to run and between processes;
        // it is mapped below the ephemeral range, where only listeners take ports.
        let drawn = bind(config)
            .await?
            .local_addr()
            .map_err(ServerError::LocalAddr)?;
        let base = port_below_ephemeral(drawn.port(), attempt, count);
        let first = match bind(&at(base)).await {
            Ok(first) => first,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        match run_from(first).await {
            Ok(listeners) => return Ok(listeners),
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("tried at least once"))
}

/// Where the system's ephemeral ports start (Linux's `ip_local_port_range`; 32768 by default).
fn ephemeral_start() -> u16 {
    #[cfg(target_os = "linux")]
    if let Ok(range) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        && let Some(low) = range.split_whitespace().next().and_then(|l| l.parse().ok())
    {
        return low;
    }
    32_768
}

/// A base port for a run of `count` ports between 10000 and the ephemeral range, from the
/// system's draw `drawn` and the attempt's number.
fn port_below_ephemeral(drawn: u16, attempt: u32, count: usize) -> u16 {
    const LOWEST: usize = 10_000;
    let top = usize::from(ephemeral_start()).saturating_sub(count);
    if top < LOWEST + 1_000 {
        // No room below the ephemeral range: the system's draw it is.
        return drawn;
    }
    let span = top - LOWEST;
    let mixed = usize::from(drawn)
        .wrapping_mul(2_654_435_761)
        .wrapping_add(attempt as usize * 7_919);
    u16::try_from(LOWEST + mixed % span).unwrap_or(drawn)
}

/// A [`ServerGroup`] serving in a background task (see [`ServerGroup::start_replicated`],
/// [`ServerGroup::start_clustered`]).
#[derive(Debug)]
pub struct RunningGroup {
    addrs: Vec<SocketAddr>,
    group: ServerGroup,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningGroup {
    /// The addresses the servers listen on, in order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The group, for its servers' engines.
    pub fn group(&self) -> &ServerGroup {
        &self.group
    }

    /// Shuts every server down gracefully and waits until they have.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for RunningGroup {
    fn drop(&mut self) {
        if self.stop.is_some()
            && let Some(first) = self.group.servers.first()
        {
            first.shutdown();
        }
    }
}
