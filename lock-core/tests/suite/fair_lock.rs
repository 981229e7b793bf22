//! The fair lock through the tokio client: waiters are granted in arrival order, a waiter that
//! gives up leaves the queue at once, and a dead waiter's place is dropped after its thread-wait
//! time so the ones behind it are served.
//!
//! Each case runs on the fake (tokio's paused time, one engine on a `TokioClock`) and on the real
//! Redis of `REDIS_URL` (real time, a 3 s watchdog, its own key prefix), the same scenario against
//! a raw connection that reads the queue and the timeouts.

use crate::support;

use bytes::Bytes;
use lock_core::{
    Backend, FairKeys, KeyLayout, LockClient, LockConfig, LockOwner, Millis, RedisBackend, Reply,
    UnlockOutcome,
};
use std::time::Duration;
use tokio::time::Instant;

/// The owner field `owner` writes in the lock's hash and queue.
fn field(client: &LockClient, owner: &LockOwner) -> Bytes {
    Bytes::from(format!("{}:{}", client.client_id(), owner.id()))
}

async fn query<B: Backend>(raw: &B, argv: &[&[u8]]) -> Reply {
    let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
    raw.command(&argv).await.expect("a plain read")
}

async fn queue<B: Backend>(raw: &B, keys: &FairKeys) -> Vec<Bytes> {
    match query(raw, &[b"LRANGE", &keys.queue, b"0", b"-1"]).await {
        Reply::Array(items) => items
            .into_iter()
            .map(|r| match r {
                Reply::Bulk(b) => b,
                other => panic!("LRANGE gave {other}"),
            })
            .collect(),
        other => panic!("LRANGE gave {other}"),
    }
}

async fn deadline<B: Backend>(raw: &B, keys: &FairKeys, owner: &Bytes) -> Option<f64> {
    match query(raw, &[b"ZSCORE", &keys.timeouts, owner]).await {
        Reply::Nil => None,
        Reply::Bulk(s) => Some(std::str::from_utf8(&s).unwrap().parse().unwrap()),
        other => panic!("ZSCORE gave {other}"),
    }
}

/// Waits (polling) until the queue is `len` long.
async fn until_queued<B: Backend>(raw: &B, keys: &FairKeys, len: usize) {
    let give_up = Instant::now() + Duration::from_secs(20);
    while queue(raw, keys).await.len() != len {
        assert!(Instant::now() < give_up, "the queue never reached {len}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn three_waiters_are_granted_in_arrival_order<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &FairKeys,
) {
    let name = keys.lock.name();
    let holder = clients[0].acquire(&name).fair().await.unwrap();
    let (tx, mut granted) = tokio::sync::mpsc::unbounded_channel();
    let mut expected = Vec::new();
    for (i, client) in clients[1..4].iter().enumerate() {
        let owner = client.new_owner().await.unwrap();
        expected.push(field(client, &owner));
        let (tx, name) = (tx.clone(), name.clone());
        tokio::spawn(async move {
            let guard = owner.acquire(&name).fair().await.unwrap();
            tx.send(i).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            guard.unlock().await.unwrap();
        });
        until_queued(raw, keys, i + 1).await;
    }
    assert_eq!(queue(raw, keys).await, expected);
    assert_eq!(holder.unlock().await.unwrap(), UnlockOutcome::Released);
    let mut order = Vec::new();
    for _ in 0..3 {
        order.push(granted.recv().await.unwrap());
    }
    assert_eq!(order, vec![0, 1, 2], "served in arrival order");
    until_queued(raw, keys, 0).await;
}

async fn a_waiter_that_gives_up_leaves_the_queue<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &FairKeys,
) {
    let name = keys.lock.name();
    let holder = clients[0].acquire(&name).fair().await.unwrap();
    let quitter = clients[1].new_owner().await.unwrap();
    let quitter_field = field(&clients[1], &quitter);
    let patient = clients[2].new_owner().await.unwrap();
    let patient_field = field(&clients[2], &patient);
    let budget = Duration::from_secs(1);
    let quitting = {
        let name = name.clone();
        tokio::spawn(async move { quitter.acquire(&name).fair().wait(budget).await })
    };
    until_queued(raw, keys, 1).await;
    let waiting = {
        let name = name.clone();
        tokio::spawn(async move { patient.acquire(&name).fair().await })
    };
    until_queued(raw, keys, 2).await;
    let before = deadline(raw, keys, &patient_field).await.unwrap();
    assert!(
        quitting.await.unwrap().unwrap().is_none(),
        "its budget ran out"
    );
    until_queued(raw, keys, 1).await;
    assert_eq!(queue(raw, keys).await, vec![patient_field.clone()]);
    assert_eq!(deadline(raw, keys, &quitter_field).await, None);
    // The one behind no longer waits for the quitter's turn.
    let after = deadline(raw, keys, &patient_field).await.unwrap();
    assert_eq!(after, before - budget.as_millis() as f64);
    holder.unlock().await.unwrap();
    let guard = waiting.await.unwrap().unwrap();
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
}

async fn a_dead_waiter_s_place_is_dropped_after_its_thread_wait<B: Backend>(
    clients: &[LockClient],
    raw: &B,
    keys: &FairKeys,
    thread_wait: Duration,
) {
    let name = keys.lock.name();
    let holder = clients[0].acquire(&name).fair().await.unwrap();
    let dead = clients[1].new_owner().await.unwrap();
    let dead_field = field(&clients[1], &dead);
    {
        let name = name.clone();
        tokio::spawn(async move { dead.acquire(&name).fair().await });
    }
    until_queued(raw, keys, 1).await;
    let live = {
        let name = name.clone();
        let client = clients[2].clone();
        tokio::spawn(async move { client.acquire(&name).fair().await })
    };
    until_queued(raw, keys, 2).await;
    // The dead waiter's client stops: it never asks again, nor gives up its place.
    clients[1].abort();
    let unlocked = Instant::now();
    holder.unlock().await.unwrap();
    let guard = live.await.unwrap().unwrap();
    // Not before the dead waiter's thread-wait time (`fair_lock_wait_timeout`, as it waited
    // forever) ran out.
    assert!(unlocked.elapsed() >= thread_wait - Duration::from_millis(500));
    assert_eq!(deadline(raw, keys, &dead_field).await, None);
    assert!(!queue(raw, keys).await.contains(&dead_field));
    assert_eq!(guard.unlock().await.unwrap(), UnlockOutcome::Released);
}

/// Four clients and a raw connection on the fake, on tokio's paused time.
fn on_the_fake() -> (Vec<LockClient>, lock_core::fake::FakeBackend, FairKeys) {
    let world = support::World::new();
    let clients = (0..4).map(|_| world.client().0).collect();
    let (raw, _) = world.backend();
    (clients, raw, KeyLayout::default().fair_lock("orders"))
}

fn redis_url() -> String {
    crate::common::redis_url()
}

/// The fair lock's wait timeout on the real Redis: short, since that test waits it out in real
/// time (the default is Redisson's 5 minutes; the fake's tests wait it out on paused time).
const REDIS_THREAD_WAIT: Duration = Duration::from_secs(5);

/// Four clients and a raw connection on the real Redis, under a prefix of the test's own.
async fn on_redis(test: &str) -> (Vec<LockClient>, RedisBackend, FairKeys) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("t-fair-{test}-{}-{nanos}", std::process::id());
    let config = LockConfig {
        watchdog_timeout: Millis(3000),
        response_timeout: Some(Millis(800)),
        fair_lock_wait_timeout: Millis::from_duration(REDIS_THREAD_WAIT),
        key_layout: KeyLayout::new(&prefix),
        ..LockConfig::default()
    };
    let url = redis_url();
    let connect = || RedisBackend::connect(&url, Duration::from_millis(800));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let backend = connect().await.expect("connect to REDIS_URL");
        clients.push(LockClient::new(backend, config.clone()).unwrap());
    }
    let raw = connect().await.expect("connect to REDIS_URL");
    let keys = KeyLayout::new(&prefix).fair_lock(&format!("{prefix}:orders"));
    (clients, raw, keys)
}

#[tokio::test(start_paused = true)]
async fn fake_three_waiters_are_granted_in_arrival_order() {
    let (clients, raw, keys) = on_the_fake();
    three_waiters_are_granted_in_arrival_order(&clients, &raw, &keys).await;
}

#[tokio::test(start_paused = true)]
async fn fake_a_waiter_that_gives_up_leaves_the_queue() {
    let (clients, raw, keys) = on_the_fake();
    a_waiter_that_gives_up_leaves_the_queue(&clients, &raw, &keys).await;
}

#[tokio::test(start_paused = true)]
async fn fake_a_dead_waiter_s_place_is_dropped_after_its_thread_wait() {
    let (clients, raw, keys) = on_the_fake();
    let thread_wait = LockConfig::default().fair_lock_wait_timeout.to_duration();
    a_dead_waiter_s_place_is_dropped_after_its_thread_wait(&clients, &raw, &keys, thread_wait)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_three_waiters_are_granted_in_arrival_order() {
    let (clients, raw, keys) = on_redis("order").await;
    three_waiters_are_granted_in_arrival_order(&clients, &raw, &keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_waiter_that_gives_up_leaves_the_queue() {
    let (clients, raw, keys) = on_redis("give-up").await;
    a_waiter_that_gives_up_leaves_the_queue(&clients, &raw, &keys).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_a_dead_waiter_s_place_is_dropped_after_its_thread_wait() {
    let (clients, raw, keys) = on_redis("dead").await;
    a_dead_waiter_s_place_is_dropped_after_its_thread_wait(
        &clients,
        &raw,
        &keys,
        REDIS_THREAD_WAIT,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_fair_hold_granted_after_its_owner_s_hold_was_marked_lost_is_released_as_fair() {
    let world = support::World::with_latency(support::ms(5));
    let (a, ai) = world.client();
    let owner = a.new_owner().await.unwrap();
    let first = owner.acquire("orders").fair().await.unwrap();
    // A second acquire of the same owner, held up on its way, is in flight when this client's
    // force unlock marks the first hold lost (before it is sent) and deletes the lock.
    world.delay_next_request(ai, support::ms(20));
    let second = tokio::spawn({
        let owner = owner.clone();
        async move { owner.acquire("orders").fair().await }
    });
    tokio::time::sleep(support::ms(1)).await;
    assert!(a.force_unlock_fair("orders").await.unwrap());
    drop(first);
    // The delayed attempt finds the lock free and takes it anew: a fair hold, released as one.
    let second = second.await.unwrap().expect("granted");
    assert!(world.exists("orders"));
    assert_eq!(second.unlock().await, Ok(UnlockOutcome::Released));
    assert_eq!(world.calls(ai, "fair_release").len(), 1);
    assert!(
        world.calls(ai, "release").is_empty(),
        "the fair lock's hold went out with the plain lock's release"
    );
    assert!(!world.exists("orders"));
}
