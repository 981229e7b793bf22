//! The lock clients' world in the client tests: the `fake-redis` crate on tokio's paused time.
//!
//! A [`World`] is one fake engine on a `TokioClock`, so tokio's paused time is the one clock of
//! the test (the one-clock rule of docs/ARCHITECTURE.md): the lock driver's timers, the engine's
//! expiry and every fault's delay move together. Each lock client gets a `FakeBackend` of its own node; faults go into the engine's
//! fault plan for that node, and every request the clients send is recorded in one shared
//! `RequestLog`, so tests can state what a client sent (lost requests included), not only what
//! the server holds.
//!
//! Tests use only the small helper API on [`World`] (`drop_next_reply(client, n)`,
//! `link_down(client, for)`, `pttl(key)`, `renewals(client)`, …).
//!
//! Why not `fake_redis::FakeRedis`, the fake's public test handle: its connections are the
//! `redis` crate's, served by the fake's server code, while a lock client here needs the lock's
//! own door, `FakeBackend`, with a latency per request and a [`RequestLog`] that names the lock's
//! scripts and says whether each call was applied; and a world here is made synchronously, at the
//! top of a test, before any task runs. The two share everything underneath: the engine, its fault
//! plan (each helper below is one entry of it), and its reads without side effects.

#![allow(dead_code)]

use bytes::Bytes;
use fake_redis::{
    CommandFate, DEFAULT_EPOCH_MS, Fault, NodeId, RequestLog, SentRequest, SharedEngine,
    TokioClock, Trigger, shared,
};
use lock_core::fake::{FakeBackend, FrameExt};
use lock_core::machine::SeededIds;
use lock_core::{LockClient, LockConfig, Reply};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The unix time at which every world starts.
pub const EPOCH_MS: i64 = DEFAULT_EPOCH_MS;

/// One millisecond.
pub const MS: Duration = Duration::from_millis(1);

/// `s` seconds.
pub const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// `m` milliseconds.
pub const fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// A client's index in its world.
pub type ClientIdx = usize;

/// One call as the world saw it leave a client.
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// Time since the world was made.
    pub at: Duration,
    pub client: ClientIdx,
    /// The script's name, or the command's (upper case).
    pub name: String,
    pub keys: Vec<Bytes>,
    /// Whether the server applied it (a dropped request is not).
    pub applied: bool,
}

/// The shared server, the clients' fault switches, and the record of what they sent.
#[derive(Clone)]
pub struct World {
    engine: SharedEngine,
    requests: RequestLog,
    origin: Instant,
    /// One-way latency of every request and reply.
    latency: Duration,
    clients: Arc<AtomicUsize>,
}

impl World {
    /// A world with no latency. Call inside a tokio runtime (paused time in these tests).
    pub fn new() -> World {
        World::with_latency(Duration::ZERO)
    }

    /// A world whose requests and replies each take `latency`.
    pub fn with_latency(latency: Duration) -> World {
        let clock = TokioClock::with_epoch(EPOCH_MS);
        let origin = clock.instant_at(EPOCH_MS);
        let world = World {
            engine: shared(lock_core::fake::engine(clock)),
            requests: RequestLog::new(),
            origin,
            latency,
            clients: Arc::new(AtomicUsize::new(0)),
        };
        // A long-running server already knows the lock's scripts, so every script call is one
        // request (no NOSCRIPT round) and the fault helpers' counts mean calls.
        for script in lock_core::script::all() {
            let sha = world.query(&[b"SCRIPT", b"LOAD", script.body.as_bytes()]);
            assert_eq!(sha, Reply::bulk(script.sha().to_owned()), "{}", script.name);
        }
        world
    }

    /// A backend for a new client; its index names it in the fault helpers.
    pub fn backend(&self) -> (FakeBackend, ClientIdx) {
        let client = self.clients.fetch_add(1, Ordering::SeqCst);
        let backend = FakeBackend::new(self.engine.clone(), node(client))
            .with_latency(self.latency)
            .with_request_log(self.requests.clone());
        (backend, client)
    }

    /// A lock client with `config` on a new backend; its ids are seeded by its index, so a test
    /// replays exactly.
    pub fn client_with(&self, config: LockConfig) -> (LockClient, ClientIdx) {
        let (backend, idx) = self.backend();
        let ids = SeededIds::new(idx as u64 + 1);
        let client = LockClient::with_ids(backend, config, ids).expect("a valid config");
        (client, idx)
    }

    /// A lock client with the default config on a new backend.
    pub fn client(&self) -> (LockClient, ClientIdx) {
        self.client_with(LockConfig::default())
    }

    /// The engine itself, for what the helpers do not cover.
    pub fn engine(&self) -> &SharedEngine {
        &self.engine
    }

    /// The instant `offset` after the world was made.
    pub fn at(&self, offset: Duration) -> Instant {
        self.origin + offset
    }

    /// Sleeps (virtual time) until `offset` after the world was made.
    pub async fn sleep_until(&self, offset: Duration) {
        tokio::time::sleep_until(self.origin + offset).await;
    }

    /// Time since the world was made.
    pub fn elapsed(&self) -> Duration {
        Instant::now() - self.origin
    }

    /// The engine's time now, as fault plans are written (unix ms).
    fn now_ms(&self) -> i64 {
        self.engine.lock().unwrap().clock_now()
    }

    /// The lowest fencing token a grant now can draw: the engine's clock in microseconds.
    pub fn token_floor(&self) -> u64 {
        self.now_ms() as u64 * 1000
    }

    fn add(&self, fault: Fault) {
        self.engine.lock().unwrap().add_fault(fault);
    }

    /// The window `[now, now + window)` in the engine's time.
    fn window(&self, window: Duration) -> (i64, i64) {
        let from = self.now_ms();
        (from, from + window.as_millis() as i64)
    }

    // ---- faults ----

    /// The next `n` requests of `client` are lost before reaching the server.
    pub fn drop_next_request(&self, client: ClientIdx, n: usize) {
        self.add(Fault::next_commands(
            node(client),
            n as u64,
            CommandFate::DropRequest,
        ));
    }

    /// The next `n` replies to `client` are lost (the calls were applied).
    pub fn drop_next_reply(&self, client: ClientIdx, n: usize) {
        self.add(Fault::next_commands(
            node(client),
            n as u64,
            CommandFate::DropReply,
        ));
    }

    /// The next request of `client` takes `delay` longer to reach the server.
    pub fn delay_next_request(&self, client: ClientIdx, delay: Duration) {
        let ms = delay.as_millis() as u64;
        self.add(Fault::next_commands(
            node(client),
            1,
            CommandFate::DelayRequest(ms),
        ));
    }

    /// Every request `client` sends in the next `window` is lost, and its subscriber connection
    /// is down for the window: lost at once, restored (every channel subscribed again) when the
    /// window ends.
    pub fn link_down(&self, client: ClientIdx, window: Duration) {
        let (from, until) = self.window(window);
        let node = node(client);
        self.add(Fault::LinkDown { node, from, until });
        self.add(Fault::SubscriberDown { node, from, until });
    }

    /// `client`'s process crashes now: its connections close (its subscriptions are gone) and it
    /// sends nothing more.
    pub fn cut_link(&self, client: ClientIdx) {
        let at = self.now_ms();
        self.add(Fault::Crash {
            node: node(client),
            at,
        });
    }

    /// Nothing `client` sends leaves, and nothing reaches it, for `window` (a GC pause); both go
    /// through when it ends.
    pub fn pause(&self, client: ClientIdx, window: Duration) {
        let from = self.now_ms();
        self.add(Fault::pause(node(client), from, window.as_millis() as i64));
    }

    /// The next `n` pub/sub messages for `client` are lost.
    pub fn drop_next_message(&self, client: ClientIdx, n: usize) {
        self.add(Fault::DropDelivery {
            node: Some(node(client)),
            trigger: Trigger::Next { count: n as u64 },
        });
    }

    /// The replies to every call `client` sends in the next `window` are lost (the calls are
    /// applied). The fault plan picks calls by node and time, not by script: a test that means
    /// one script's replies checks in the log that nothing else was sent in the window.
    pub fn drop_replies_for(&self, client: ClientIdx, window: Duration) {
        let (from, until) = self.window(window);
        self.add(Fault::Command {
            node: Some(node(client)),
            fault: CommandFate::DropReply,
            trigger: Trigger::During { from, until },
        });
    }

    // ---- the server's state, read as a Redis client would (no faults, no node) ----

    fn query(&self, argv: &[&[u8]]) -> Reply {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let mut engine = self.engine.lock().unwrap();
        let observer = engine.connect();
        let reply = engine.execute(observer, &argv).to_reply();
        engine.disconnect(observer);
        if let Reply::Error(e) = &reply {
            panic!("{argv:?} failed on the fake: {e}");
        }
        reply
    }

    /// `PTTL key`.
    pub fn pttl(&self, key: &str) -> i64 {
        self.query(&[b"PTTL", key.as_bytes()]).as_int().unwrap()
    }

    /// `EXISTS key`.
    pub fn exists(&self, key: &str) -> bool {
        self.query(&[b"EXISTS", key.as_bytes()]) == Reply::Int(1)
    }

    /// The hold count of `owner` (its hash field) on `key`.
    pub fn count(&self, key: &str, owner: &str) -> u64 {
        match self.query(&[b"HGET", key.as_bytes(), owner.as_bytes()]) {
            Reply::Nil => 0,
            Reply::Bulk(count) => String::from_utf8_lossy(&count).parse().unwrap(),
            other => panic!("HGET replied {other:?}"),
        }
    }

    /// Every owner field of the lock hash at `key`, with its count.
    pub fn holders(&self, key: &str) -> Vec<(String, String)> {
        let Reply::Array(items) = self.query(&[b"HGETALL", key.as_bytes()]) else {
            panic!("HGETALL replied with something else than an array");
        };
        let text = |r: &Reply| match r {
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("HGETALL item {other:?}"),
        };
        items
            .chunks(2)
            .map(|pair| (text(&pair[0]), text(&pair[1])))
            .collect()
    }

    /// `SET key value`: something other than a lock at `key`.
    pub fn set(&self, key: &str, value: &str) {
        assert_eq!(
            self.query(&[b"SET", key.as_bytes(), value.as_bytes()]),
            Reply::Status("OK".into())
        );
    }

    /// `PERSIST key`.
    pub fn persist(&self, key: &str) -> bool {
        self.query(&[b"PERSIST", key.as_bytes()]) == Reply::Int(1)
    }

    // ---- what the clients sent ----

    /// Every call sent so far.
    pub fn log(&self) -> Vec<CallRecord> {
        self.requests
            .entries()
            .into_iter()
            .map(|sent| self.record(sent))
            .collect()
    }

    fn record(&self, sent: SentRequest) -> CallRecord {
        // A FakeBackend sends one command per request.
        let argv = &sent.commands[0];
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
        let (name, keys) = if name == "EVALSHA" {
            let script = lock_core::script::by_sha(&argv[1]).expect("one of the lock's scripts");
            let numkeys: usize = String::from_utf8_lossy(&argv[2]).parse().unwrap();
            (script.name.to_owned(), argv[3..3 + numkeys].to_vec())
        } else {
            (name, argv[1..].to_vec())
        };
        CallRecord {
            at: Duration::from_millis((sent.at - EPOCH_MS) as u64),
            client: sent.node.0 as ClientIdx,
            name,
            keys,
            applied: sent.applied,
        }
    }

    /// Calls of `script` sent by `client`.
    pub fn calls(&self, client: ClientIdx, script: &str) -> Vec<CallRecord> {
        self.log()
            .into_iter()
            .filter(|r| r.client == client && r.name == script)
            .collect()
    }

    /// Send times of `client`'s renewal calls.
    pub fn renewals(&self, client: ClientIdx) -> Vec<Duration> {
        self.calls(client, "renew_batch")
            .into_iter()
            .map(|r| r.at)
            .collect()
    }

    /// Send times of `client`'s renewal calls that named `key`.
    pub fn renewals_of(&self, client: ClientIdx, key: &str) -> Vec<Duration> {
        self.calls(client, "renew_batch")
            .into_iter()
            .filter(|r| r.keys.iter().any(|k| &k[..] == key.as_bytes()))
            .map(|r| r.at)
            .collect()
    }
}

/// The fault plan's name for client `client`.
fn node(client: ClientIdx) -> NodeId {
    NodeId(client as u64)
}
