//! The fair lock's scripts keep Redisson's queue rules, shown on the reference store step by step:
//! waiters are granted in arrival order, a release wakes only the head on its own channel, a
//! waiter that gives up leaves the queue and moves the others' deadlines, and a waiter silent past
//! its thread-wait time is dropped by the next script that looks at the queue.
//!
//! The differential test holds the native twins to the Lua bodies on Redis; these cases hold the
//! twins to the rules.

use bytes::Bytes;
use lock_core::script::fair::acquire::FairAcquireReply;
use lock_core::script::reference::{ReferenceStore, Value};
use lock_core::script::release::ReleaseReply;
use lock_core::script::{Store, fair};
use lock_core::{FairKeys, KeyLayout, Lease, Millis, Owner, RequestId};

const T0: i64 = 1_700_000_000_000;
const LEASE: u64 = 10_000;
const WAIT: Millis = Millis(5_000);

fn keys() -> FairKeys {
    KeyLayout::default().fair_lock("orders")
}

fn owner(i: u64) -> Owner {
    Owner::new("client", i)
}

fn lease() -> Lease {
    Lease::from_millis(LEASE).unwrap()
}

fn acquire(store: &mut ReferenceStore, who: u64) -> FairAcquireReply {
    let call = fair::acquire::call(&keys(), lease(), &owner(who), WAIT, store.now(), None);
    fair::acquire::decode(&call.run_native(store)).unwrap()
}

fn release(store: &mut ReferenceStore, who: u64, request: u128) -> ReleaseReply {
    let call = fair::release::call(
        &keys(),
        &RequestId(request),
        lease(),
        &owner(who),
        store.now(),
        Millis(20_000),
        None,
    );
    fair::release::decode(&call.run_native(store)).unwrap()
}

fn queue(store: &mut ReferenceStore) -> Vec<Bytes> {
    match store.value(&keys().queue) {
        None => vec![],
        Some(Value::List(l)) => l.clone(),
        Some(other) => panic!("the queue is {other:?}"),
    }
}

fn deadline(store: &mut ReferenceStore, who: u64) -> Option<f64> {
    store
        .zscore(&keys().timeouts, owner(who).as_bytes())
        .unwrap()
}

#[test]
fn waiters_are_granted_in_arrival_order_and_each_release_wakes_only_the_head() {
    let mut store = ReferenceStore::new(T0);
    assert_eq!(acquire(&mut store, 0), FairAcquireReply::Acquired);
    // B waits for the holder's lease, C for B's deadline: each a thread-wait further.
    assert_eq!(
        acquire(&mut store, 1),
        FairAcquireReply::Queued(LEASE as i64)
    );
    assert_eq!(
        acquire(&mut store, 2),
        FairAcquireReply::Queued((LEASE + WAIT.as_u64()) as i64)
    );
    assert_eq!(deadline(&mut store, 1), Some((T0 + 15_000) as f64));
    assert_eq!(deadline(&mut store, 2), Some((T0 + 20_000) as f64));
    // Asking again keeps the place.
    assert_eq!(
        acquire(&mut store, 2),
        FairAcquireReply::Queued(LEASE as i64)
    );
    assert_eq!(
        queue(&mut store),
        vec![owner(1).as_bytes().clone(), owner(2).as_bytes().clone()]
    );

    assert_eq!(release(&mut store, 0, 1), ReleaseReply::Released);
    let channel = keys().waiter_channel(&owner(1));
    assert_eq!(store.published(), [(channel, Bytes::from_static(b"0"))]);
    // The lock is free, but it is B's turn: C keeps waiting (the free lock's PTTL, at least 0).
    assert_eq!(acquire(&mut store, 2), FairAcquireReply::Queued(0));
    assert_eq!(acquire(&mut store, 1), FairAcquireReply::Acquired);
    // B's grant took its thread-wait off C's deadline.
    assert_eq!(deadline(&mut store, 2), Some((T0 + 15_000) as f64));
    assert_eq!(release(&mut store, 1, 2), ReleaseReply::Released);
    assert_eq!(
        store.published().last().unwrap().0,
        keys().waiter_channel(&owner(2))
    );
    assert_eq!(acquire(&mut store, 2), FairAcquireReply::Acquired);
    assert_eq!(queue(&mut store), Vec::<Bytes>::new());
    assert_eq!(store.value(&keys().timeouts), None);
}

#[test]
fn a_waiter_that_gives_up_leaves_the_queue_and_the_ones_behind_move_up() {
    let mut store = ReferenceStore::new(T0);
    acquire(&mut store, 0);
    acquire(&mut store, 1);
    acquire(&mut store, 2);
    let call = fair::give_up::call(&keys(), &owner(1), WAIT);
    assert_eq!(call.run_native(&mut store), lock_core::Reply::Nil);
    assert_eq!(queue(&mut store), vec![owner(2).as_bytes().clone()]);
    assert_eq!(deadline(&mut store, 1), None);
    assert_eq!(deadline(&mut store, 2), Some((T0 + 15_000) as f64));
    release(&mut store, 0, 1);
    assert_eq!(
        store.published().last().unwrap().0,
        keys().waiter_channel(&owner(2))
    );
    assert_eq!(acquire(&mut store, 2), FairAcquireReply::Acquired);
}

#[test]
fn a_silent_waiter_is_dropped_after_its_deadline() {
    let mut store = ReferenceStore::new(T0);
    acquire(&mut store, 0);
    acquire(&mut store, 1);
    acquire(&mut store, 2);
    // The holder is force-unlocked; B never comes back.
    let call = fair::force_unlock::call(&keys(), store.now());
    assert_eq!(
        fair::force_unlock::decode(&call.run_native(&mut store)),
        Ok(true)
    );
    assert_eq!(
        store.published().last().unwrap().0,
        keys().waiter_channel(&owner(1))
    );
    // Before B's deadline, C may not pass it.
    store.advance(14_000);
    assert!(matches!(
        acquire(&mut store, 2),
        FairAcquireReply::Queued(_)
    ));
    // At B's deadline (its score, by the client's clock) B is dropped, and C is served.
    store.advance(1_000);
    assert_eq!(acquire(&mut store, 2), FairAcquireReply::Acquired);
    assert_eq!(deadline(&mut store, 1), None);
    assert_eq!(queue(&mut store), Vec::<Bytes>::new());
}

#[test]
fn releasing_a_lock_that_is_gone_wakes_the_head_as_redisson_does() {
    let mut store = ReferenceStore::new(T0);
    acquire(&mut store, 0);
    acquire(&mut store, 1);
    store.advance(LEASE as i64 + 1);
    assert_eq!(release(&mut store, 0, 1), ReleaseReply::Released);
    assert_eq!(
        store.published().last().unwrap().0,
        keys().waiter_channel(&owner(1))
    );
    // A repeat of the same request replies as the first did, and publishes nothing more.
    let before = store.published().len();
    assert_eq!(release(&mut store, 0, 1), ReleaseReply::Released);
    assert_eq!(store.published().len(), before);
}

#[test]
fn a_repeated_grant_does_not_count_twice() {
    let mut store = ReferenceStore::new(T0);
    let first = fair::acquire::call(&keys(), lease(), &owner(0), WAIT, T0, Some(0));
    assert_eq!(first.run_native(&mut store), lock_core::Reply::Nil);
    assert_eq!(first.run_native(&mut store), lock_core::Reply::Nil);
    assert_eq!(
        store.hget(&keys().lock.lock, owner(0).as_bytes()).unwrap(),
        Some(Bytes::from_static(b"1"))
    );
}
