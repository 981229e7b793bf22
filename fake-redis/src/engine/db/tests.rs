//! The keyspace's tests, kept beside it so that `db.rs` holds the keyspace alone: expiry and the
//! active cycle's candidates, the table of slots (`SCAN`, flushes, random keys) and the write
//! journal's rollback, checked against the database's own bookkeeping.

use super::*;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl Db {
    /// The candidates are exactly the keys with a TTL, each pointing at its slot and holding
    /// its deadline.
    fn assert_candidates_exact(&self) {
        let volatile: Vec<(u32, &Slot)> = self
            .table
            .iter_ix()
            .filter(|(_, s)| s.entry.deadline().is_some())
            .collect();
        assert_eq!(self.volatile.len(), volatile.len());
        for (ix, slot) in volatile {
            let c = self.volatile[slot.entry.volatile_ix as usize];
            assert_eq!((c.slot, Some(c.deadline)), (ix, slot.entry.deadline()));
        }
        // Every slot not in the index is free, and every free one is empty.
        let held = self.table.slots.iter().filter(|s| s.is_some()).count();
        assert_eq!(held, self.table.len());
        assert_eq!(held + self.table.free.len(), self.table.slots.len());
    }
}

#[test]
fn an_empty_place_in_the_vector_of_slots_costs_no_more_than_a_slot() {
    // `Option`'s tag fits in a niche of the key's, so a free place needs no extra word.
    assert_eq!(size_of::<Option<Slot>>(), size_of::<Slot>());
}

#[test]
fn a_key_lives_through_its_deadline_millisecond() {
    let mut db = Db::default();
    db.insert(b"k", Value::Str(b("v")), Some(100), 0);
    assert!(db.lookup(b"k", 100).is_some());
    assert!(db.lookup(b"k", 101).is_none());
    assert_eq!(db.len(), 0);
}

#[test]
fn sampling_removes_expired_keys_and_a_deleted_key_leaves_the_sample() {
    let mut db = Db::default();
    for i in 0..50 {
        db.insert(format!("k{i}").as_bytes(), Value::Str(b("v")), Some(10), 0);
    }
    db.remove(b"k3", 0);
    assert_eq!(db.volatile.len(), 49);
    let mut x = 7u64;
    let mut rng = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 11
    };
    while db.has_volatile() {
        db.expire_sample(11, 20, &mut rng);
    }
    assert_eq!(db.len(), 0);
}

#[test]
fn candidates_stay_bounded_while_the_clock_stands_still() {
    let mut db = Db::default();
    for i in 0..10_000 {
        let key = Bytes::from(format!("k{}", i % 10));
        db.insert(&key, Value::Str(b("v")), Some(1_000), 0);
        if i % 3 == 0 {
            db.remove(&key, 0);
        }
    }
    assert!(
        db.volatile.len() <= 2 * db.len() + 1024,
        "{}",
        db.volatile.len()
    );
    let mut x = 1u64;
    let mut rng = || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        x
    };
    while db.has_volatile() {
        db.expire_sample(2_000, 20, &mut rng);
    }
    assert_eq!(db.len(), 0);
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u8, Option<i64>),
    Remove(u8),
    SetDeadline(u8, Option<i64>),
    Change(u8, Option<i64>),
    Sample,
    Advance(i64),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let deadline = prop::option::of(0i64..200);
    prop_oneof![
        (0u8..12, deadline.clone()).prop_map(|(k, d)| Op::Insert(k, d)),
        (0u8..12).prop_map(Op::Remove),
        (0u8..12, deadline.clone()).prop_map(|(k, d)| Op::SetDeadline(k, d)),
        (0u8..12, deadline).prop_map(|(k, d)| Op::Change(k, d)),
        Just(Op::Sample),
        (0i64..60).prop_map(Op::Advance),
    ]
}

proptest::proptest! {
    /// The candidate bookkeeping never loses or resurrects a key: after any sequence of writes,
    /// deletions, deadline changes and expiry samples, the live keys and deadlines are those of
    /// a plain map with Redis's expiry rule, and sampling long enough removes every expired key.
    #[test]
    fn expiry_bookkeeping_matches_a_plain_map(ops in proptest::collection::vec(op(), 1..200)) {
        let mut db = Db::default();
        let mut model: BTreeMap<Bytes, Option<i64>> = BTreeMap::new();
        let mut now = 0i64;
        let mut x = 9u64;
        let mut rng = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for op in ops {
            model.retain(|_, d| d.is_none_or(|d| now <= d));
            match op {
                Op::Insert(k, d) => {
                    let key = Bytes::from(format!("k{k}"));
                    db.insert(&key, Value::Str(b("v")), d, now);
                    model.insert(key, d);
                }
                Op::Remove(k) => {
                    let key = format!("k{k}");
                    db.remove(key.as_bytes(), now);
                    model.remove(key.as_bytes());
                }
                Op::SetDeadline(k, d) => {
                    let key = format!("k{k}");
                    if db.lookup(key.as_bytes(), now).is_some() {
                        db.set_deadline(key.as_bytes(), d, now);
                        model.insert(Bytes::from(key), d);
                    }
                }
                Op::Change(k, d) => {
                    let key = format!("k{k}");
                    let change = match d {
                        Some(d) if d <= now => DeadlineChange::Delete,
                        Some(d) => DeadlineChange::Set(d),
                        None => DeadlineChange::Keep,
                    };
                    let live = db.change_deadline_h(key.as_bytes(), hash_key(key.as_bytes()), now, |_| change);
                    proptest::prop_assert_eq!(live, model.contains_key(key.as_bytes()));
                    match change {
                        DeadlineChange::Delete => { model.remove(key.as_bytes()); }
                        DeadlineChange::Set(d) if live => { model.insert(Bytes::from(key), Some(d)); }
                        _ => {}
                    }
                }
                Op::Sample => {
                    db.expire_sample(now, 20, &mut rng);
                }
                Op::Advance(ms) => now += ms,
            }
            model.retain(|_, d| d.is_none_or(|d| now <= d));
            let live: Vec<(Bytes, Option<i64>)> = db
                .live_entries(now)
                .into_iter()
                .map(|(k, e)| (k, e.deadline()))
                .collect();
            let want: Vec<(Bytes, Option<i64>)> = model.clone().into_iter().collect();
            proptest::prop_assert_eq!(live, want);
            db.assert_candidates_exact();
        }
        for _ in 0..10_000 {
            if !db.has_volatile() {
                break;
            }
            db.expire_sample(now, 20, &mut rng);
        }
        proptest::prop_assert_eq!(db.len(), model.len());
    }
}

#[test]
fn a_scan_returns_every_key_present_throughout_at_count_s_cost() {
    let mut db = Db::default();
    for i in 0..5_000 {
        db.insert(format!("stay{i}").as_bytes(), Value::Str(b("v")), None, 0);
    }
    let mut seen = BTreeSet::new();
    let (mut cursor, mut calls, mut churn) = (0, 0, 0);
    loop {
        let (next, keys) = db.scan(cursor, 50);
        assert!(keys.len() <= 50);
        seen.extend(keys);
        calls += 1;
        // Writes between calls: keys come and go (as latches do), and once the table grows,
        // which moves every key and makes the scan start over.
        for _ in 0..40 {
            db.insert(
                format!("new{churn}").as_bytes(),
                Value::Str(b("v")),
                None,
                0,
            );
            if churn >= 40 {
                db.remove(format!("new{}", churn - 40).as_bytes(), 0);
            }
            churn += 1;
        }
        if calls == 10 {
            for i in 0..5_000 {
                db.insert(format!("grow{i}").as_bytes(), Value::Str(b("v")), None, 0);
            }
        }
        cursor = next;
        if cursor == 0 {
            break;
        }
        assert!(calls < 100_000, "the scan must end");
    }
    for i in 0..5_000 {
        assert!(
            seen.contains(format!("stay{i}").as_bytes()),
            "stay{i} missed"
        );
    }
    // Without writes, a scan is one pass: about keys / count calls.
    let (mut cursor, mut calls) = (0, 0);
    loop {
        let (next, _) = db.scan(cursor, 1_000);
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert!(calls <= 2 * db.len() / 1_000 + 10, "{calls} calls");
}

#[test]
fn a_flush_frees_the_table_and_deletions_shrink_it_as_redis_resizes_its_dicts() {
    let mut db = Db::default();
    for i in 0..100_000 {
        db.insert(
            format!("k{i}").as_bytes(),
            Value::Str(b("v")),
            Some(1 << 40),
            0,
        );
    }
    assert!(db.table.num_buckets() >= 100_000);
    db.flush(0);
    assert_eq!((db.table.capacity(), db.volatile.capacity()), (0, 0));

    for i in 0..100_000 {
        db.insert(format!("k{i}").as_bytes(), Value::Str(b("v")), None, 0);
    }
    let full = db.table.num_buckets();
    for i in 0..99_000 {
        db.remove(format!("k{i}").as_bytes(), 0);
    }
    // Never under 10% full: 1,000 keys in at most 10,000 buckets, not the 131,072 of the
    // full table.
    assert!(
        db.table.num_buckets() <= 10 * db.len(),
        "{}",
        db.table.num_buckets()
    );
    assert!(db.table.num_buckets() < full / 8);
    for i in 99_000..100_000 {
        assert!(db.lookup(format!("k{i}").as_bytes(), 0).is_some(), "k{i}");
    }
}

#[test]
fn random_keys_come_from_the_table() {
    let mut db = Db::default();
    assert_eq!(db.random_key(|| 7), None);
    for i in 0..100 {
        db.insert(format!("k{i}").as_bytes(), Value::Str(b("v")), None, 0);
    }
    for i in 0..99 {
        db.remove(format!("k{i}").as_bytes(), 0);
    }
    let mut x = 3u64;
    let key = db.random_key(|| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        x
    });
    assert_eq!(key, Some(b("k99")));
}

#[test]
fn rollback_restores_previous_entries() {
    let mut db = Db::default();
    db.set_journal(Some(60_000));
    db.insert(b"a", Value::Str(b("1")), None, 100);
    db.insert(b"a", Value::Str(b("2")), Some(5_000), 200);
    db.insert(b"b", Value::Str(b("x")), None, 300);
    assert_eq!(db.rollback_after(150), 2);
    assert_eq!(
        db.lookup(b"a", 400).map(|e| e.value.clone()),
        Some(Value::Str(b("1")))
    );
    assert!(db.lookup(b"b", 400).is_none());
}
