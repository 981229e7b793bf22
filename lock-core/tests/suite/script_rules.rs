//! Every rule of the lock scripts, stated as a test over the native twins and the reference store,
//! on a scripted clock. The differential test holds the Lua bodies to the same behaviour.

use bytes::Bytes;
use lock_core::script::acquire::{AcquireReply, HolderTtl};
use lock_core::script::acquire_fenced::FencedReply;
use lock_core::script::reference::{ReferenceStore, Value};
use lock_core::script::release::ReleaseReply;
use lock_core::script::{Store, acquire, acquire_fenced, force_unlock, release, renew_batch, rw};
use lock_core::{InvalidLease, KeyLayout, Lease, LockKeys, Millis, Owner, Reply, RequestId};

const LATCH_TTL: Millis = Millis(10_000);

struct World {
    store: ReferenceStore,
    keys: LockKeys,
    a: Owner,
    b: Owner,
}

fn world() -> World {
    World {
        store: ReferenceStore::new(1_700_000_000_000),
        keys: KeyLayout::default().lock("orders"),
        a: Owner::new("client-a", 1),
        b: Owner::new("client-b", 1),
    }
}

fn lease(ms: u64) -> Lease {
    Lease::from_millis(ms).unwrap()
}

impl World {
    fn acquire(&mut self, owner: &Owner, req: u128, lease_ms: u64) -> AcquireReply {
        let call = acquire::call(
            &self.keys,
            &RequestId(req),
            lease(lease_ms),
            owner,
            LATCH_TTL,
        );
        acquire::decode(&call.run_native(&mut self.store)).unwrap()
    }

    fn fenced(&mut self, owner: &Owner, req: u128, lease_ms: u64) -> FencedReply {
        let call = acquire_fenced::call(
            &self.keys,
            &RequestId(req),
            lease(lease_ms),
            owner,
            LATCH_TTL,
        );
        acquire_fenced::decode(&call.run_native(&mut self.store)).unwrap()
    }

    fn release(&mut self, owner: &Owner, req: u128, lease_ms: u64) -> ReleaseReply {
        let call = release::call(
            &self.keys,
            &RequestId(req),
            lease(lease_ms),
            owner,
            LATCH_TTL,
        );
        release::decode(&call.run_native(&mut self.store)).unwrap()
    }

    fn pttl(&mut self) -> i64 {
        let lock = self.keys.lock.clone();
        self.store.pttl(&lock).unwrap()
    }

    fn count(&mut self, owner: &Owner) -> i64 {
        let lock = self.keys.lock.clone();
        self.store
            .hget(&lock, owner.as_bytes())
            .unwrap()
            .map_or(0, |v| std::str::from_utf8(&v).unwrap().parse().unwrap())
    }
}

#[test]
fn first_acquire_creates_the_hash_with_the_lease() {
    let mut w = world();
    let a = w.a.clone();
    assert_eq!(w.acquire(&a, 1, 30_000), AcquireReply::Acquired);
    assert_eq!(w.count(&a), 1);
    assert_eq!(w.pttl(), 30_000);
}

#[test]
fn reentry_resets_the_ttl_to_the_new_lease() {
    let mut w = world();
    let a = w.a.clone();
    w.acquire(&a, 1, 30_000);
    w.store.advance(20_000);
    assert_eq!(w.pttl(), 10_000);
    assert_eq!(w.acquire(&a, 2, 5_000), AcquireReply::Acquired);
    assert_eq!(w.count(&a), 2);
    assert_eq!(
        w.pttl(),
        5_000,
        "reentry sets the new lease, even a shorter one"
    );
}

#[test]
fn a_replayed_acquire_request_is_a_no_op() {
    let mut w = world();
    let a = w.a.clone();
    w.acquire(&a, 1, 30_000);
    w.store.advance(1_000);
    assert_eq!(w.acquire(&a, 1, 30_000), AcquireReply::Acquired);
    assert_eq!(w.count(&a), 1, "the replay must not count a second hold");
    assert_eq!(w.pttl(), 29_000, "the replay must not touch the TTL");
}

#[test]
fn a_held_lock_replies_the_holders_pttl() {
    let mut w = world();
    let (a, b) = (w.a.clone(), w.b.clone());
    w.acquire(&a, 1, 30_000);
    w.store.advance(12_345);
    assert_eq!(
        w.acquire(&b, 2, 30_000),
        AcquireReply::Held(HolderTtl::Remaining(Millis(17_655)))
    );
    assert_eq!(w.count(&b), 0);
}

#[test]
fn the_key_lives_through_its_deadline_millisecond() {
    let mut w = world();
    let (a, b) = (w.a.clone(), w.b.clone());
    w.acquire(&a, 1, 30_000);
    w.store.advance(30_000);
    assert_eq!(
        w.acquire(&b, 2, 30_000),
        AcquireReply::Held(HolderTtl::Remaining(Millis(0)))
    );
    w.store.advance(1);
    assert_eq!(w.acquire(&b, 2, 30_000), AcquireReply::Acquired);
}

#[test]
fn acquire_against_a_holder_with_no_ttl_replies_minus_one() {
    let mut w = world();
    let (a, b) = (w.a.clone(), w.b.clone());
    w.acquire(&a, 1, 30_000);
    let lock = w.keys.lock.clone();
    assert!(w.store.persist(&lock));
    let call = acquire::call(&w.keys, &RequestId(2), lease(30_000), &b, LATCH_TTL);
    let reply = call.run_native(&mut w.store);
    assert_eq!(reply, Reply::Int(-1));
    assert_eq!(
        acquire::decode(&reply).unwrap(),
        AcquireReply::Held(HolderTtl::NoTtl)
    );
}

#[test]
fn release_by_a_non_owner_replies_nil() {
    let mut w = world();
    let (a, b) = (w.a.clone(), w.b.clone());
    w.acquire(&a, 1, 30_000);
    assert_eq!(w.release(&b, 2, 30_000), ReleaseReply::NotHeld);
    assert_eq!(w.count(&a), 1);
    assert!(w.store.published().is_empty());
}

#[test]
fn a_reentrant_release_restores_the_lease_and_replies_0() {
    let mut w = world();
    let a = w.a.clone();
    w.acquire(&a, 1, 30_000);
    w.acquire(&a, 2, 30_000);
    w.store.advance(25_000);
    assert_eq!(w.release(&a, 3, 30_000), ReleaseReply::StillHeld);
    assert_eq!(w.count(&a), 1);
    assert_eq!(
        w.pttl(),
        30_000,
        "a reentrant release re-applies the full lease"
    );
    assert!(w.store.published().is_empty());
}

#[test]
fn the_last_release_deletes_the_key_publishes_0_and_replies_1() {
    let mut w = world();
    let a = w.a.clone();
    w.acquire(&a, 1, 30_000);
    assert_eq!(w.release(&a, 2, 30_000), ReleaseReply::Released);
    assert_eq!(w.pttl(), -2);
    assert_eq!(
        w.store.published(),
        &[(w.keys.channel.clone(), Bytes::from_static(b"0"))]
    );
}

#[test]
fn a_repeated_release_with_the_same_request_id_replies_the_latched_value() {
    let mut w = world();
    let a = w.a.clone();
    w.acquire(&a, 1, 30_000);
    w.acquire(&a, 2, 30_000);
    assert_eq!(w.release(&a, 3, 30_000), ReleaseReply::StillHeld);
    assert_eq!(w.release(&a, 3, 30_000), ReleaseReply::StillHeld);
    assert_eq!(w.count(&a), 1, "the repeat must not release a second hold");
    assert_eq!(w.release(&a, 4, 30_000), ReleaseReply::Released);
    assert_eq!(w.release(&a, 4, 30_000), ReleaseReply::Released);
    assert_eq!(
        w.store.published().len(),
        1,
        "the repeat must not publish again"
    );
}

#[test]
fn renew_of_a_key_whose_owner_is_gone_replies_0_and_leaves_it_untouched() {
    let mut w = world();
    let (a, b) = (w.a.clone(), w.b.clone());
    let other = KeyLayout::default().lock("invoices");
    w.acquire(&b, 1, 30_000);
    w.store.advance(10_000);
    let call = renew_batch::call(
        lease(30_000),
        [(&w.keys.lock, &a), (&other.lock, &a), (&w.keys.lock, &b)],
    );
    let reply = call.run_native(&mut w.store);
    assert_eq!(
        renew_batch::decode(&reply, 3).unwrap(),
        vec![false, false, true]
    );
    assert_eq!(w.pttl(), 30_000, "b's hold was renewed");
    let call = renew_batch::call(lease(30_000), [(&w.keys.lock, &a)]);
    w.store.advance(5_000);
    call.run_native(&mut w.store);
    assert_eq!(w.pttl(), 25_000, "a's failed renewal leaves b's TTL alone");
    assert_eq!(w.count(&a), 0);
}

#[test]
fn a_read_hold_whose_timeout_key_expired_is_not_renewed_though_other_readers_kept_the_lock() {
    let mut store = ReferenceStore::new(1_700_000_000_000);
    let keys = KeyLayout::default().read_write("report");
    let (a, b) = (Owner::new("client-a", 1), Owner::new("client-b", 1));
    // a reads under a 10 s lease, b under 30 s: after 15 s a's timeout key is gone, its count is
    // not, and b's lease keeps the lock.
    for (owner, req, ms) in [(&a, 1, 10_000), (&b, 2, 30_000)] {
        let call =
            rw::read_acquire::call(&keys, &RequestId(req), lease(ms), owner, LATCH_TTL, None);
        assert_eq!(call.run_native(&mut store), Reply::Nil);
    }
    store.advance(15_000);
    let lock = keys.lock.lock.clone();
    assert!(
        !store
            .exists(&rw::read_acquire::timeout_key(&keys, &a, 1))
            .unwrap()
    );
    assert!(store.hget(&lock, a.as_bytes()).unwrap().is_some());
    let renew = |store: &mut ReferenceStore, owner: &Owner| {
        let call = rw::renew::call(lease(30_000), [(&lock, &keys.key_prefix, owner)]);
        rw::renew::decode(&call.run_native(store), 1).unwrap()
    };
    // a's count is no longer held: its renewal says so and touches nothing.
    assert_eq!(renew(&mut store, &a), vec![false]);
    assert_eq!(store.pttl(&lock).unwrap(), 15_000);
    assert!(
        !store
            .exists(&rw::read_acquire::timeout_key(&keys, &a, 1))
            .unwrap()
    );
    assert_eq!(renew(&mut store, &b), vec![true]);
    assert_eq!(store.pttl(&lock).unwrap(), 30_000);
    // Had it said 1, a would believe it reads for another lease; but b's release, finding no
    // timeout key of any other reader, deletes the lock, and a writer may take it.
    let call = rw::read_release::call(&keys, &RequestId(3), &b, LATCH_TTL, None);
    call.run_native(&mut store);
    assert!(
        !store.exists(&lock).unwrap(),
        "the last live reader's release ends the lock"
    );
}

#[test]
fn fenced_tokens_strictly_increase_reentry_included_and_a_replay_returns_the_same_token() {
    let mut w = world();
    let (a, b) = (w.a.clone(), w.b.clone());
    // The first token is the store's clock in microseconds (the counter's floor); at one frozen
    // time the next ones count up from it.
    let floor = w.store.now() as u64 * 1000;
    assert_eq!(
        w.fenced(&a, 1, 30_000),
        FencedReply::Acquired { token: floor }
    );
    assert_eq!(
        w.fenced(&a, 2, 30_000),
        FencedReply::Acquired { token: floor + 1 }
    );
    assert_eq!(
        w.fenced(&a, 2, 30_000),
        FencedReply::Acquired { token: floor + 1 }
    );
    assert_eq!(w.count(&a), 2);
    assert_eq!(
        w.fenced(&b, 3, 30_000),
        FencedReply::Held(HolderTtl::Remaining(Millis(30_000)))
    );
    w.release(&a, 4, 30_000);
    w.release(&a, 5, 30_000);
    assert_eq!(
        w.fenced(&b, 3, 30_000),
        FencedReply::Acquired { token: floor + 2 }
    );
}

#[test]
fn force_unlock_replies_1_then_0() {
    let mut w = world();
    let a = w.a.clone();
    w.acquire(&a, 1, 30_000);
    let call = force_unlock::call(&w.keys);
    assert!(force_unlock::decode(&call.run_native(&mut w.store)).unwrap());
    assert!(!force_unlock::decode(&call.run_native(&mut w.store)).unwrap());
    assert_eq!(w.store.published().len(), 1);
}

#[test]
fn a_lease_of_zero_is_refused_before_any_call() {
    assert_eq!(Lease::from_millis(0), Err(InvalidLease(Millis(0))));
}

#[test]
fn a_wrong_typed_token_counter_fails_with_the_script_suffix_before_any_write() {
    let mut w = world();
    let a = w.a.clone();
    // The token counter holds a list: acquire_fenced fails at its INCR (Lua line 10), its first
    // write, so neither the hold nor the latch is written.
    let token = w.keys.token.clone();
    w.store.set_list(&token, b"x");
    let call = acquire_fenced::call(&w.keys, &RequestId(1), lease(30_000), &a, LATCH_TTL);
    let reply = call.run_native(&mut w.store);
    assert_eq!(
        reply,
        Reply::Error(format!(
            "WRONGTYPE Operation against a key holding the wrong kind of value script: {}, on @user_script:10.",
            acquire_fenced::SCRIPT.sha()
        ))
    );
    assert_eq!(w.count(&a), 0);
    assert_eq!(w.pttl(), -2);
    assert_eq!(w.store.value(&w.keys.acquire_latch(&RequestId(1))), None);
    assert_eq!(
        w.store.value(&token),
        Some(&Value::List(vec![Bytes::from_static(b"x")]))
    );
}

#[test]
fn a_late_copy_of_a_reentrant_release_cannot_take_a_count_the_owner_still_has() {
    let mut w = world();
    let a = w.a.clone();
    let b = w.b.clone();
    let lease30 = lease(30_000);
    for (req, held) in [(1, 0), (2, 1)] {
        let call = acquire::call_from(&w.keys, &RequestId(req), lease30, &a, LATCH_TTL, held);
        assert_eq!(call.run_native(&mut w.store), Reply::Nil);
    }
    assert_eq!(w.count(&a), 2);
    let unlock = release::call_from(&w.keys, &RequestId(3), lease30, &a, LATCH_TTL, 2);
    assert_eq!(unlock.run_native(&mut w.store), Reply::Int(0));
    assert_eq!(w.count(&a), 1);
    // The same request arrives again after its latch expired: the count it carried is gone.
    w.store.advance(LATCH_TTL.as_u64() as i64 + 1);
    assert_eq!(unlock.run_native(&mut w.store), Reply::Int(0));
    assert_eq!(w.count(&a), 1);
    assert!(matches!(w.acquire(&b, 4, 30_000), AcquireReply::Held(_)));
    // The owner's own last release still carries the count the server has.
    let last = release::call_from(&w.keys, &RequestId(5), lease30, &a, LATCH_TTL, 1);
    assert_eq!(last.run_native(&mut w.store), Reply::Int(1));
    assert_eq!(w.pttl(), -2);
}

#[test]
fn a_late_copy_of_a_reentry_does_not_count_twice() {
    let mut w = world();
    let a = w.a.clone();
    let lease30 = lease(30_000);
    let first = acquire::call_from(&w.keys, &RequestId(1), lease30, &a, LATCH_TTL, 0);
    assert_eq!(first.run_native(&mut w.store), Reply::Nil);
    let reentry = acquire_fenced::call_from(&w.keys, &RequestId(2), lease30, &a, LATCH_TTL, 1);
    let token = reentry.run_native(&mut w.store);
    assert_eq!(w.count(&a), 2);
    w.store.advance(LATCH_TTL.as_u64() as i64 + 1);
    // The copy confirms the hold (its lease is applied again) but adds no count.
    let copy = reentry.run_native(&mut w.store);
    assert_ne!(copy, token, "a copy past the latch draws a new token");
    assert_eq!(w.count(&a), 2);
    assert_eq!(w.pttl(), 30_000);
    // Redisson's form carries no count, and counts every reentry.
    assert_eq!(w.acquire(&a, 3, 30_000), AcquireReply::Acquired);
    assert_eq!(w.count(&a), 3);
}

#[test]
fn a_string_on_the_lock_key_is_a_wrong_type_for_every_script() {
    let mut w = world();
    let a = w.a.clone();
    let lock = w.keys.lock.clone();
    w.store.set_string(&lock, b"v");
    let call = acquire::call(&w.keys, &RequestId(1), lease(30_000), &a, LATCH_TTL);
    let Reply::Error(text) = call.run_native(&mut w.store) else {
        panic!("expected an error")
    };
    assert!(
        text.starts_with("WRONGTYPE") && text.ends_with("on @user_script:4."),
        "{text}"
    );
}
