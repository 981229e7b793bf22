//! A watchdog pass on a cluster: its holds are taken in slot order before they are cut into
//! batches, so that the cluster backend, which sends a batch as one call per slot (a script's
//! keys must share one), sends as few calls as the slots allow.
//!
//! With 10,000 holds of distinct names spread over the three shards of a 3-primary cluster, a
//! pass is 100 batches of 100 holds, which the backend sends as 7,557 calls (the holds' slots
//! number 7,532; in name order the same batches would take 9,983), each of at most 100 holds.

use crate::machine_rig;

use lock_core::cluster_backend::key_slot;
use lock_core::machine::{Call, Wait};
use lock_core::{LockConfig, Millis};
use machine_rig::{Rig, t};
use std::collections::{BTreeMap, BTreeSet};

const HOLDS: usize = 10_000;

#[test]
fn a_pass_over_10_000_holds_costs_one_call_per_slot_of_each_batch() {
    let mut rig = Rig::new(LockConfig::default());
    let names: Vec<String> = (0..HOLDS).map(|i| format!("orders:{i}")).collect();
    for name in &names {
        let op = rig.acquire(0, name, None, Wait::Budget(Millis(0)));
        rig.acquired(0, op);
    }
    rig.advance_to(t(10_000));
    let batches: Vec<Vec<u16>> = rig
        .calls_named("renew_batch")
        .iter()
        .map(|s| match &s.call {
            Call::Script(c) => c.keys.iter().map(|k| key_slot(k)).collect(),
            Call::Command(_) => unreachable!(),
        })
        .collect();
    assert_eq!(batches.len(), 100, "batches of batch_size = 100 holds");
    assert!(batches.iter().all(|b| b.len() == 100));
    // One call per slot of a batch: what ClusterBackend sends.
    let calls: Vec<usize> = batches
        .iter()
        .map(|b| b.iter().collect::<BTreeSet<_>>().len())
        .collect();
    let slots: BTreeSet<u16> = names.iter().map(|n| key_slot(n.as_bytes())).collect();
    assert_eq!(slots.len(), 7_532);
    assert_eq!(calls.iter().sum::<usize>(), 7_557);
    // The holds cover the three shards of a 3-primary cluster (Redis's even split).
    let mut per_shard: BTreeMap<u8, usize> = BTreeMap::new();
    for name in &names {
        let shard = match key_slot(name.as_bytes()) {
            0..=5460 => 0,
            5461..=10922 => 1,
            _ => 2,
        };
        *per_shard.entry(shard).or_default() += 1;
    }
    assert_eq!(
        per_shard.into_values().collect::<Vec<_>>(),
        vec![3337, 3333, 3330]
    );
    // Every hold was renewed once.
    assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), HOLDS);
}
