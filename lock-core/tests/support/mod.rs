//! A STAND-IN for the `fake-redis` crate's `FakeBackend`, until the branches merge.
//!
//! [`World`] is one `ReferenceStore` (the scripts' reference keyspace) whose clock follows tokio's
//! paused time (unix ms = a fixed epoch + tokio `Instant` elapsed since the world was made), shared
//! by any number of [`TestBackend`]s, one per lock client. Published unlock messages reach the
//! backends subscribed to their channel. Faults are simple and scriptable per client: drop the
//! next N requests or replies, delay the next request, take the link down for a window, cut it for
//! good (a crash), pause a client, drop the next pub/sub message, drop replies of one script for a
//! window. A dropped request or reply leaves the call hanging; the lock driver's response timeout
//! turns it into "outcome unknown", as with a real lost packet.
//!
//! Tests use only the small helper API on [`World`] (`drop_next_reply(client, n)`,
//! `link_down(client, for)`, `pttl(key)`, `renewals(client)`, …), so that switching them to the
//! fake's fault plan touches this file only.

#![allow(dead_code)]

use bytes::Bytes;
use lock_core::script::ScriptCall;
use lock_core::script::Store;
use lock_core::script::reference::ReferenceStore;
use lock_core::{Backend, BackendError, PubSubEvent, Reply};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The unix time at which every world starts.
pub const EPOCH_MS: i64 = 1_700_000_000_000;

/// A client's index in its world.
pub type ClientIdx = usize;

/// One call as the world saw it leave a client.
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// Time since the world was made.
    pub at: Duration,
    pub client: ClientIdx,
    /// The script's name, or the command's.
    pub name: String,
    pub keys: Vec<Bytes>,
    /// Whether the server applied it (a dropped request is not).
    pub applied: bool,
}

#[derive(Default)]
struct Link {
    drop_requests: usize,
    drop_replies: usize,
    delay_next_request: Option<Duration>,
    down_until: Option<Instant>,
    cut: bool,
    paused_until: Option<Instant>,
    drop_messages: usize,
    /// (script name, until): replies of that script are dropped until then.
    drop_replies_of: Option<(String, Instant)>,
    subscribed: BTreeSet<Bytes>,
    events: Option<mpsc::UnboundedSender<PubSubEvent>>,
}

struct State {
    store: ReferenceStore,
    links: Vec<Link>,
    log: Vec<CallRecord>,
    published_seen: usize,
}

/// The shared server and the fault switches of every client.
#[derive(Clone)]
pub struct World {
    state: Arc<Mutex<State>>,
    origin: Instant,
    /// One-way latency of every request and reply.
    latency: Duration,
}

enum Fate {
    Deliver,
    Lose,
}

impl World {
    /// A world with no latency. Call inside a tokio runtime (paused time in these tests).
    pub fn new() -> World {
        World::with_latency(Duration::ZERO)
    }

    /// A world whose requests and replies each take `latency`.
    pub fn with_latency(latency: Duration) -> World {
        World {
            state: Arc::new(Mutex::new(State {
                store: ReferenceStore::new(EPOCH_MS),
                links: Vec::new(),
                log: Vec::new(),
                published_seen: 0,
            })),
            origin: Instant::now(),
            latency,
        }
    }

    /// A backend for a new client; its index names it in the fault helpers.
    pub fn backend(&self) -> (TestBackend, ClientIdx) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = self.state.lock().unwrap();
        state.links.push(Link {
            events: Some(tx),
            ..Link::default()
        });
        let client = state.links.len() - 1;
        (
            TestBackend {
                world: self.clone(),
                client,
                events: tokio::sync::Mutex::new(rx),
            },
            client,
        )
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

    fn with_store<T>(&self, f: impl FnOnce(&mut ReferenceStore) -> T) -> T {
        let mut state = self.state.lock().unwrap();
        let now = EPOCH_MS + self.elapsed().as_millis() as i64;
        state.store.set_now(now);
        f(&mut state.store)
    }

    fn link<T>(&self, client: ClientIdx, f: impl FnOnce(&mut Link) -> T) -> T {
        f(&mut self.state.lock().unwrap().links[client])
    }

    // ---- faults ----

    /// The next `n` requests of `client` are lost before reaching the server.
    pub fn drop_next_request(&self, client: ClientIdx, n: usize) {
        self.link(client, |l| l.drop_requests += n);
    }

    /// The next `n` replies to `client` are lost (the calls were applied).
    pub fn drop_next_reply(&self, client: ClientIdx, n: usize) {
        self.link(client, |l| l.drop_replies += n);
    }

    /// The next request of `client` takes `delay` longer to reach the server.
    pub fn delay_next_request(&self, client: ClientIdx, delay: Duration) {
        self.link(client, |l| l.delay_next_request = Some(delay));
    }

    /// Every request and reply of `client` is lost for `window`; its subscriptions are lost and
    /// restored when the window ends.
    pub fn link_down(&self, client: ClientIdx, window: Duration) {
        let until = Instant::now() + window;
        let events = self.link(client, |l| {
            l.down_until = Some(until);
            l.events.clone()
        });
        if let Some(events) = events {
            let _ = events.send(PubSubEvent::SubscriptionLost);
            tokio::spawn(async move {
                tokio::time::sleep_until(until).await;
                let _ = events.send(PubSubEvent::SubscriptionRestored);
            });
        }
    }

    /// Cuts `client`'s link for good (its process crashed): nothing it sends arrives, nothing
    /// reaches it, its subscriptions are gone.
    pub fn cut_link(&self, client: ClientIdx) {
        self.link(client, |l| {
            l.cut = true;
            l.subscribed.clear();
        });
    }

    /// Nothing `client` sends leaves, and nothing reaches it, for `window` (a GC pause); both go
    /// through when it ends.
    pub fn pause(&self, client: ClientIdx, window: Duration) {
        let until = Instant::now() + window;
        self.link(client, |l| l.paused_until = Some(until));
    }

    /// The next `n` pub/sub messages for `client` are lost.
    pub fn drop_next_message(&self, client: ClientIdx, n: usize) {
        self.link(client, |l| l.drop_messages += n);
    }

    /// Replies to `client`'s calls of `script` are lost for `window` (the calls are applied).
    pub fn drop_replies_of(&self, client: ClientIdx, script: &str, window: Duration) {
        let until = Instant::now() + window;
        self.link(client, |l| {
            l.drop_replies_of = Some((script.to_owned(), until))
        });
    }

    // ---- the server's state ----

    /// `PTTL key`.
    pub fn pttl(&self, key: &str) -> i64 {
        self.with_store(|s| s.pttl(key.as_bytes()).unwrap())
    }

    /// `EXISTS key`.
    pub fn exists(&self, key: &str) -> bool {
        self.with_store(|s| s.exists(key.as_bytes()).unwrap())
    }

    /// The hold count of `owner` (its hash field) on `key`.
    pub fn count(&self, key: &str, owner: &str) -> u64 {
        self.with_store(|s| {
            s.hget(key.as_bytes(), owner.as_bytes())
                .unwrap()
                .map_or(0, |b| String::from_utf8_lossy(&b).parse().unwrap())
        })
    }

    /// Every owner field of the lock hash at `key`, with its count.
    pub fn holders(&self, key: &str) -> Vec<(String, String)> {
        self.with_store(|s| match s.value(key.as_bytes()) {
            Some(lock_core::script::reference::Value::Hash(fields)) => fields
                .iter()
                .map(|(f, v)| {
                    (
                        String::from_utf8_lossy(f).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect(),
            _ => Vec::new(),
        })
    }

    /// `PERSIST key`.
    pub fn persist(&self, key: &str) -> bool {
        self.with_store(|s| s.persist(key.as_bytes()))
    }

    /// Every call sent so far.
    pub fn log(&self) -> Vec<CallRecord> {
        self.state.lock().unwrap().log.clone()
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

    // ---- the wire ----

    fn link_lost(&self, client: ClientIdx) -> bool {
        self.link(client, |l| {
            l.cut || l.down_until.is_some_and(|until| Instant::now() < until)
        })
    }

    async fn wait_pause(&self, client: ClientIdx) {
        if let Some(until) = self.link(client, |l| l.paused_until) {
            tokio::time::sleep_until(until).await;
        }
    }

    async fn call(
        &self,
        client: ClientIdx,
        name: &str,
        keys: Vec<Bytes>,
        run: impl FnOnce(&mut ReferenceStore) -> Reply + Send + 'static,
    ) -> Result<Reply, BackendError> {
        self.wait_pause(client).await;
        let at = self.elapsed();
        let (fate, delay) = self.link(client, |l| {
            let delay = l.delay_next_request.take();
            if l.drop_requests > 0 {
                l.drop_requests -= 1;
                (Fate::Lose, delay)
            } else {
                (Fate::Deliver, delay)
            }
        });
        let lost = matches!(fate, Fate::Lose) || self.link_lost(client);
        let index = {
            let mut state = self.state.lock().unwrap();
            state.log.push(CallRecord {
                at,
                client,
                name: name.to_owned(),
                keys,
                applied: false,
            });
            state.log.len() - 1
        };
        if lost {
            return std::future::pending().await;
        }
        // The request travels on its own: a caller that stops waiting (a timeout) does not stop
        // it from landing, as with a real network.
        let world = self.clone();
        let (landed, reply) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            tokio::time::sleep(world.latency + delay.unwrap_or_default()).await;
            let reply = {
                let mut state = world.state.lock().unwrap();
                let now = EPOCH_MS + world.elapsed().as_millis() as i64;
                state.store.set_now(now);
                let reply = run(&mut state.store);
                state.log[index].applied = true;
                deliver_published(&mut state);
                reply
            };
            let _ = landed.send(reply);
        });
        let Ok(reply) = reply.await else {
            return std::future::pending().await;
        };
        tokio::time::sleep(self.latency).await;
        self.wait_pause(client).await;
        let drop_reply = self.link(client, |l| {
            let of_script = l
                .drop_replies_of
                .as_ref()
                .is_some_and(|(script, until)| script == name && Instant::now() < *until);
            if of_script {
                true
            } else if l.drop_replies > 0 {
                l.drop_replies -= 1;
                true
            } else {
                false
            }
        });
        if drop_reply || self.link_lost(client) {
            return std::future::pending().await;
        }
        match reply {
            Reply::Error(text) => Err(BackendError::Server(text)),
            reply => Ok(reply),
        }
    }
}

fn deliver_published(state: &mut State) {
    let published = state.store.published()[state.published_seen..].to_vec();
    state.published_seen += published.len();
    for (channel, payload) in published {
        for link in state.links.iter_mut() {
            if link.cut || !link.subscribed.contains(&channel) {
                continue;
            }
            if link.drop_messages > 0 {
                link.drop_messages -= 1;
                continue;
            }
            if let Some(events) = &link.events {
                let _ = events.send(PubSubEvent::Message {
                    channel: channel.clone(),
                    payload: payload.clone(),
                });
            }
        }
    }
}

/// The plain commands the lock uses, by hand.
fn command(store: &mut ReferenceStore, argv: &[Bytes]) -> Reply {
    let name = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
    let result = match (name.as_str(), argv.len()) {
        ("EXISTS", 2) => store.exists(&argv[1]).map(|b| Reply::Int(i64::from(b))),
        ("HGET", 3) => store
            .hget(&argv[1], &argv[2])
            .map(|v| v.map_or(Reply::Nil, Reply::Bulk)),
        ("PTTL", 2) => store.pttl(&argv[1]).map(Reply::Int),
        ("PERSIST", 2) => Ok(Reply::Int(i64::from(store.persist(&argv[1])))),
        _ => Ok(Reply::Error(format!(
            "ERR unknown command '{name}' in the test backend"
        ))),
    };
    result.unwrap_or_else(|e| Reply::Error(e.0))
}

/// One client's connection to the [`World`].
pub struct TestBackend {
    world: World,
    client: ClientIdx,
    events: tokio::sync::Mutex<mpsc::UnboundedReceiver<PubSubEvent>>,
}

impl Backend for TestBackend {
    async fn eval(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        let call = call.clone();
        let keys = call.keys.clone();
        let name = call.script.name;
        self.world
            .call(self.client, name, keys, move |store| call.run_native(store))
            .await
    }

    async fn command(&self, argv: &[Bytes]) -> Result<Reply, BackendError> {
        let argv = argv.to_vec();
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
        let keys = argv[1..].to_vec();
        self.world
            .call(self.client, &name, keys, move |store| command(store, &argv))
            .await
    }

    async fn subscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        if self.world.link_lost(self.client) {
            return std::future::pending().await;
        }
        let channel = channel.clone();
        self.world
            .link(self.client, |l| l.subscribed.insert(channel));
        Ok(())
    }

    async fn unsubscribe(&self, channel: &Bytes) -> Result<(), BackendError> {
        let channel = channel.clone();
        self.world
            .link(self.client, |l| l.subscribed.remove(&channel));
        Ok(())
    }

    async fn next_event(&self) -> PubSubEvent {
        let mut events = self.events.lock().await;
        match events.recv().await {
            Some(event) => event,
            None => std::future::pending().await,
        }
    }
}
