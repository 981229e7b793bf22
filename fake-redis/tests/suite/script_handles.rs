//! The native scripts' calls by key handle (`engine/db/handle.rs`) against the general command
//! path: the same script calls on two engines, one whose database is quiet (the calls go by
//! handle) and one whose keyspace events are on (every call takes the command functions), must
//! give the same replies, the same keys with the same deadlines and values, and the same
//! `INFO stats` counters. The handles exist only to be faster, so nothing may tell them apart.

use crate::support::argv;
use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, ManualClock};
use lock_core::keys::{KeyLayout, Owner, RequestId};
use lock_core::script::{ScriptCall, acquire, release};
use lock_core::time::{Lease, Millis};

/// An engine with the lock's twins, its scripts loaded; `loud` turns every keyspace event on.
fn engine(loud: bool) -> (ManualClock, Engine, ClientId) {
    let clock = ManualClock::new(1_000_000);
    let mut engine = lock_core::fake::engine(clock.clone());
    let c = engine.connect();
    for s in [&acquire::SCRIPT, &release::SCRIPT] {
        engine.execute(c, &s.load_argv());
    }
    if loud {
        let reply = engine.execute(c, &argv("CONFIG SET notify-keyspace-events KEA"));
        assert_eq!(reply, Frame::OK);
    }
    (clock, engine, c)
}

/// A key with its type, its `PTTL` and its value.
type Key = (Bytes, Frame, Frame, Frame);

/// Every key with its type, its `PTTL` and its value, in key order, and the read and expiry
/// counters of `INFO stats`.
fn state(e: &mut Engine, c: ClientId) -> (Vec<Key>, Vec<String>) {
    let Frame::Array(keys) = e.execute(c, &argv("KEYS *")) else {
        panic!("KEYS replies an array");
    };
    let mut keys: Vec<Bytes> = keys
        .into_iter()
        .map(|k| match k {
            Frame::Bulk(b) => b,
            other => panic!("a key is a bulk string, not {other:?}"),
        })
        .collect();
    keys.sort();
    let mut out = Vec::new();
    for k in keys {
        let with = |cmd: &str| {
            let mut a = vec![Bytes::copy_from_slice(cmd.as_bytes())];
            a.push(k.clone());
            a
        };
        let kind = e.execute(c, &with("TYPE"));
        let pttl = e.execute(c, &with("PTTL"));
        let value = match &kind {
            Frame::Simple(t) if t == "hash" => e.execute(c, &with("HGETALL")),
            _ => e.execute(c, &with("GET")),
        };
        out.push((k, kind, pttl, value));
    }
    let info = match e.execute(c, &argv("INFO stats")) {
        Frame::Bulk(text) | Frame::Verbatim { text, .. } => text,
        other => panic!("INFO replies text, not {other:?}"),
    };
    let stats = String::from_utf8_lossy(&info)
        .lines()
        .filter(|l| {
            ["keyspace_hits:", "keyspace_misses:", "expired_keys:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_owned)
        .collect();
    (out, stats)
}

/// The calls of a small run: owners taking, re-entering and releasing a few locks, repeats of
/// a request (its latch replays), releases by a non-owner, and the clock moving so that leases
/// and latches expire between some of them.
fn calls() -> Vec<(ScriptCall, i64)> {
    let layout = KeyLayout::default();
    let locks: Vec<_> = (0..3).map(|i| layout.lock(&format!("l{i}"))).collect();
    let owners = [
        Owner::new("5f1c0a3e9b7d4c2a8e6f0b1d3c5a7e9f", 1),
        Owner::new("5f1c0a3e9b7d4c2a8e6f0b1d3c5a7e9f", 2),
    ];
    let lease = Lease::from_millis(50).expect("a lease");
    let latch = Millis(30);
    let mut out = Vec::new();
    // A fixed walk through the cases (no generator: the two engines must see the same calls).
    for n in 0u64..400 {
        let keys = &locks[(n % 3) as usize];
        let owner = &owners[((n / 3) % 2) as usize];
        let id = RequestId(u128::from(n / 2));
        let call = match n % 5 {
            0 | 3 => acquire::call(keys, &id, lease, owner, latch),
            1 => release::call(keys, &id, lease, owner, latch),
            2 => acquire::call_from(keys, &id, lease, owner, latch, (n % 3) as u32),
            _ => release::call_from(keys, &id, lease, owner, latch, 1),
        };
        let step = [0, 1, 7, 31, 60][(n % 7 % 5) as usize];
        out.push((call, step));
    }
    out
}

#[test]
fn lock_scripts_by_handle_answer_and_leave_what_the_command_path_does() {
    let (quiet_clock, mut quiet, qc) = engine(false);
    let (loud_clock, mut loud, lc) = engine(true);
    for (i, (call, step)) in calls().into_iter().enumerate() {
        let a = quiet.execute(qc, &call.evalsha_argv());
        let b = loud.execute(lc, &call.evalsha_argv());
        assert_eq!(a, b, "call {i} ({})", call.script.name);
        quiet_clock.advance(step);
        loud_clock.advance(step);
        if i % 50 == 0 {
            assert_eq!(
                state(&mut quiet, qc),
                state(&mut loud, lc),
                "after call {i}"
            );
        }
    }
    let (keys, stats) = state(&mut quiet, qc);
    assert_eq!((keys.clone(), stats.clone()), state(&mut loud, lc));
    assert!(
        stats
            .iter()
            .any(|l| l != "keyspace_hits:0" && l.starts_with("keyspace_hits:")),
        "the run reads keys that are there: {stats:?}"
    );
}

#[test]
fn a_handle_follows_a_key_the_script_deletes_and_writes_again() {
    // A release that empties the lock deletes it, and the next acquire creates it again, in
    // whatever slot is free then: each script finds it by its own probe.
    let (_clock, mut e, c) = engine(false);
    let keys = KeyLayout::default().lock("again");
    let owner = Owner::new("5f1c0a3e9b7d4c2a8e6f0b1d3c5a7e9f", 1);
    let lease = Lease::from_millis(1_000).expect("a lease");
    for n in 0..20u128 {
        let a = acquire::call(&keys, &RequestId(2 * n), lease, &owner, Millis(10));
        assert_eq!(e.execute(c, &a.evalsha_argv()), Frame::Null);
        let r = release::call(&keys, &RequestId(2 * n + 1), lease, &owner, Millis(10));
        assert_eq!(e.execute(c, &r.evalsha_argv()), Frame::Integer(1));
        let exists = [Bytes::from_static(b"EXISTS"), keys.lock.clone()];
        assert_eq!(e.execute(c, &exists), Frame::Integer(0));
    }
}
