//! The lock on a Redis Cluster: three shards, each a primary with a replica (`shards=3
//! replicas=1` on the case line), the locks spread over the shards by their slots (`L3` on shard
//! 0, `L2` on shard 1, `L0` and `L1` on shard 2), and the cluster's faults: a shard's failover
//! to its lagging replica (`fault failover … shard=S`), a lock's slot migrating while it is held
//! (`fault migrate lock=N shard=S`), and a primary partitioned from its replica and from some
//! clients (`fault partition node=P … clients=…`).
//!
//! The envelope, as on one shard (`failover.rs`). With the replica check on, an acquire is
//! confirmed only once its shard's replica has it, so a failover loses no confirmed acquire unless
//! that replica is lost too; a partition that cuts a primary off from its replica makes its
//! `WAIT`s come back short, so nothing is confirmed there while it lasts, and a failover during
//! it loses nothing anyone relied on. A migration loses nothing: the slot's keys move whole,
//! renewals and releases follow `ASK` and `MOVED` to them, and every safety rule holds with the
//! check on or off. With the check off, a failover within the lag may hand a lock to a second
//! owner: only what data loss can break may break, and the checkers must name it.
//!
//! Each suite runs `sim_tests::cases(n)` cases: CI's default, and ten times as many as a soak
//! with `SIM_CASES=10000`.

use crate::common;

use common::{SAFETY, all, checkers, clean_run, data_loss_may_break, of_rules, outside};
use proptest::prelude::*;
use sim_tests::strategy::{Envelope, cases};
use sim_tests::{Case, Checker, ClientSpec, Fault, Run, explain, run};
use std::collections::BTreeSet;

/// The shard `create_slot_ranges(3)` gives a slot.
fn shard_of(lock: u32) -> u16 {
    match fake_redis::key_slot(format!("L{lock}").as_bytes()) {
        0..=5460 => 0,
        5461..=10922 => 1,
        _ => 2,
    }
}

/// Lock 2 lives on shard 1, whose primary is node 1 and whose replica is node 4.
const LOCK: u32 = 2;
const SHARD: u16 = 1;

/// A cluster of three shards with one replica each lagging 200 ms; a holds `L2` from 1 s for
/// 20 s, b asks for it at 1.2 s, and c works on `L3` (shard 0) beside them.
fn cluster_case(sync: bool) -> Case {
    let mut case = Case::new(3, 60_000);
    case.shards = 3;
    case.replicas = 1;
    case.replica_lag = (200, 200);
    case.sync = sync;
    let mut a = ClientSpec::new("a", LOCK);
    a.start = 1_000;
    a.work = (20_000, 20_000);
    let mut b = ClientSpec::new("b", LOCK);
    b.start = 1_200;
    b.work = (5_000, 5_000);
    let mut c = ClientSpec::new("c", 3);
    c.start = 1_000;
    c.work = (2_000, 2_000);
    c.cycles = 3;
    case.clients = vec![a, b, c];
    case
}

fn safety(run: &Run) -> Vec<&sim_tests::Violation> {
    of_rules(run, &SAFETY)
}

fn traced(run: &Run, text: &str) -> bool {
    run.trace.iter().any(|l| l.contains(text))
}

#[test]
fn the_locks_of_a_case_spread_over_the_shards_and_each_is_granted_on_its_own() {
    assert_eq!([shard_of(3), shard_of(2), shard_of(0)], [0, 1, 2]);
    let mut case = cluster_case(true);
    let mut d = ClientSpec::new("d", 0);
    d.start = 1_000;
    case.clients.push(d);
    let run = clean_run(&case);
    for client in ["a", "b", "c", "d"] {
        assert!(run.first(client, "acquire").is_some(), "{}", run.timeline());
    }
    // Each grant waited for its own shard's replica.
    assert!(
        traced(&run, "(WAIT: 1 of 1 replicas)"),
        "{}",
        run.timeline()
    );
    assert!(run.first("b", "acquire").unwrap() >= 21_000);
}

#[test]
fn without_the_replica_check_a_shards_failover_within_the_lag_grants_a_second_owner_and_is_caught()
{
    let mut case = cluster_case(false);
    case.faults = vec![Fault::Promote {
        at: 1_100,
        replica: 0,
        shard: SHARD,
    }];
    let run = run(&case);
    assert!(run.first("a", "acquire").unwrap() < 1_100);
    assert!(
        run.first("b", "acquire").unwrap() < 21_000,
        "{}",
        run.timeline()
    );
    let found = checkers(&run);
    assert!(
        found.contains(&Checker::ServerExclusive),
        "{}",
        explain(&case, &run, &all(&run))
    );
    let allowed = BTreeSet::from([Checker::ServerExclusive, Checker::UnfencedOverlap]);
    assert!(
        found.is_subset(&allowed),
        "{}",
        explain(&case, &run, &all(&run))
    );
    // The clients met the failed primary's MOVED and followed it to the promoted replica.
    assert!(traced(&run, "node 1: MOVED"), "{}", run.timeline());
}

#[test]
fn with_the_replica_check_a_shards_failover_loses_no_confirmed_acquire() {
    for at in (1_010..1_300).step_by(30) {
        let mut case = cluster_case(true);
        case.faults = vec![Fault::Promote {
            at,
            replica: 0,
            shard: SHARD,
        }];
        let run = run(&case);
        assert!(
            safety(&run).is_empty(),
            "{}",
            explain(&case, &run, &safety(&run))
        );
        let mut off = case.clone();
        off.sync = false;
        if at < 1_200 {
            let off_run = sim_tests::run(&off);
            assert!(
                !off_run.of(Checker::ServerExclusive).is_empty(),
                "failover at {at}: {}",
                explain(&off, &off_run, &all(&off_run))
            );
        }
    }
}

#[test]
fn a_failover_of_another_shard_leaves_the_lock_where_it_was() {
    let mut case = cluster_case(false);
    case.faults = vec![Fault::Promote {
        at: 1_100,
        replica: 0,
        shard: 0,
    }];
    let run = run(&case);
    // Shard 0 lost c's grant of L3 (the check is off); shard 1 kept its data: nothing breaks on
    // L2, and b waits for a's release.
    let on_l2: Vec<_> = run
        .violations
        .iter()
        .filter(|v| v.message.contains("L2"))
        .collect();
    assert!(on_l2.is_empty(), "{}", explain(&case, &run, &on_l2));
    assert!(!run.of(Checker::ServerExclusive).is_empty());
    assert!(
        run.first("b", "acquire").unwrap() >= 21_000,
        "{}",
        run.timeline()
    );
}

#[test]
fn a_locks_slot_migrating_while_it_is_held_is_followed_and_stays_exclusive() {
    for sync in [true, false] {
        // The watchdog renews every 10 s: the renewal at about 11 s meets the slot mid-move (its
        // one key moved at 11 s). Without the check it follows the ASK to the importing node.
        // With it, the renewal is a pipeline of the script and its WAIT, whose ASK the cluster
        // client does not follow (as `ClusterBackend`'s): it is refused unrun and sent again
        // until the slot has moved, and the next one follows the new owner's MOVED. The 12 s
        // window is well within the lease, so a keeps the lock either way.
        let mut case = cluster_case(sync);
        case.faults = vec![Fault::Migrate {
            lock: LOCK,
            to_shard: 0,
            at: 5_000,
            for_ms: 12_000,
        }];
        let run = clean_run(&case);
        let renewals = run.all("a", "renew");
        let during = renewals.iter().any(|&t| (5_000..17_000).contains(&t));
        assert_eq!(during, !sync, "{}", run.timeline());
        if sync {
            assert!(renewals.iter().any(|&t| t >= 17_000), "{}", run.timeline());
        }
        assert!(traced(&run, "node 1: MOVED"), "{}", run.timeline());
        let ask = if sync {
            "node 1: ASK in a pipeline, not followed"
        } else {
            "node 1: ASK slot 7856, follows to node 0"
        };
        assert!(traced(&run, ask), "{}", run.timeline());
        let b_at = run.first("b", "acquire").expect("b acquired");
        assert!(b_at >= 21_000, "{}", run.timeline());
    }
}

#[test]
fn a_primary_cut_off_from_its_replica_confirms_no_grant_until_the_partition_heals() {
    let mut case = cluster_case(true);
    case.faults = vec![Fault::Partition {
        node: SHARD,
        at: 500,
        for_ms: 10_000,
        clients: Vec::new(),
    }];
    let run = run(&case);
    assert!(
        safety(&run).is_empty(),
        "{}",
        explain(&case, &run, &safety(&run))
    );
    assert!(
        traced(&run, "(WAIT: 0 of 1 replicas)"),
        "{}",
        run.timeline()
    );
    // Both were granted on the primary and refused by the check, which gave the grant back.
    for client in ["a", "b"] {
        assert!(
            run.first(client, "not-acquired").is_some(),
            "{}",
            run.timeline()
        );
        assert!(run.first(client, "acquire").is_none(), "{}", run.timeline());
    }
    // Shard 0 is not cut off: c's grants are confirmed as ever.
    assert!(run.first("c", "acquire").is_some_and(|t| t < 2_000));
}

#[test]
fn a_holder_cut_off_from_its_primary_times_out_and_gives_the_lock_up_in_time() {
    // Without the check: the partition stalls the replica too, which would refuse b's grant.
    let mut case = cluster_case(false);
    case.faults = vec![Fault::Partition {
        node: SHARD,
        at: 2_000,
        for_ms: 40_000,
        clients: vec![0],
    }];
    let run = clean_run(&case);
    assert!(traced(&run, "lost (partitioned)"), "{}", run.timeline());
    assert!(run.first("a", "timeout").is_some(), "{}", run.timeline());
    // a's lease runs out on the server (about 31 s) and b, not cut off, takes the lock then.
    let b_at = run.first("b", "acquire");
    assert!(
        b_at.is_some_and(|t| (30_000..42_000).contains(&t)),
        "{}",
        run.timeline()
    );
}

#[test]
fn a_cluster_case_replays_exactly_from_its_text() {
    let mut case = cluster_case(true);
    case.faults = vec![
        Fault::Migrate {
            lock: LOCK,
            to_shard: 2,
            at: 3_000,
            for_ms: 1_000,
        },
        Fault::Partition {
            node: 0,
            at: 1_500,
            for_ms: 3_000,
            clients: vec![2],
        },
        Fault::Promote {
            at: 2_000,
            replica: 0,
            shard: 0,
        },
    ];
    let again: Case = case.one_line().parse().unwrap();
    assert_eq!(again, case);
    let (one, two) = (run(&case), run(&again));
    assert_eq!(one.trace, two.trace);
    assert_eq!(one.trace_hash, two.trace_hash);
}

/// Random cases on three shards of a primary and a replica lagging 0..300 ms, the clients on
/// four locks (every shard has one), and `extra` cluster faults added to the envelope's.
fn clustered(sync: bool, extra: BoxedStrategy<Vec<Fault>>) -> impl Strategy<Value = Case> {
    (
        cases(Envelope {
            locks: 4,
            faults: 0..=2,
            horizon: 40_000,
            ..Envelope::safe()
        }),
        0u64..=200,
        0u64..=100,
        extra,
    )
        .prop_map(move |(mut case, fixed, jitter, extra)| {
            case.shards = 3;
            case.replicas = 1;
            case.replica_lag = (fixed, fixed + jitter);
            case.sync = sync;
            let clients = case.clients.len();
            for mut fault in extra {
                if let Fault::Partition { clients: cut, .. } = &mut fault {
                    cut.retain(|&c| c < clients);
                }
                case.faults.push(fault);
            }
            case
        })
}

/// A failover of one shard.
fn failovers() -> BoxedStrategy<Vec<Fault>> {
    (0u64..40_000, 0u16..3)
        .prop_map(|(at, shard)| {
            vec![Fault::Promote {
                at,
                replica: 0,
                shard,
            }]
        })
        .boxed()
}

/// A lock's slot migrating to another shard, in a window of up to 15 s.
fn migrations() -> BoxedStrategy<Vec<Fault>> {
    (0u32..4, 1u16..3, 0u64..30_000, 10u64..15_000)
        .prop_map(|(lock, step, at, for_ms)| {
            let to_shard = (shard_of(lock) + step) % 3;
            vec![Fault::Migrate {
                lock,
                to_shard,
                at,
                for_ms,
            }]
        })
        .boxed()
}

/// A primary partitioned from its replica and from some clients, failed over (half the time)
/// by the side that still reaches its replica.
fn partitions() -> BoxedStrategy<Vec<Fault>> {
    (
        0u16..3,
        0u64..30_000,
        500u64..20_000,
        any::<u8>(),
        prop::option::of(0u64..1_000),
    )
        .prop_map(|(node, at, for_ms, mask, failover)| {
            let clients = (0..4).filter(|c| mask & (1 << c) != 0).collect();
            let mut faults = vec![Fault::Partition {
                node,
                at,
                for_ms,
                clients,
            }];
            if let Some(after) = failover {
                faults.push(Fault::Promote {
                    at: at + after.min(for_ms - 1),
                    replica: 0,
                    shard: node,
                });
            }
            faults
        })
        .boxed()
}

/// Whether some client is crashed or paused at a failover, or was cut off from the failed
/// primary then: it cannot learn of the failover, and what it believed until then is what
/// client-side exclusivity still sees.
fn blind_at_a_failover(case: &Case) -> bool {
    case.faults.iter().any(|f| {
        let Fault::Promote { at: loss, .. } = *f else {
            return false;
        };
        case.faults.iter().any(|g| match *g {
            Fault::Crash { at, .. } => at <= loss,
            Fault::Pause { at, for_ms, .. } => at <= loss && loss < at + for_ms,
            Fault::Partition {
                at,
                for_ms,
                ref clients,
                ..
            } => !clients.is_empty() && at <= loss && loss < at + for_ms,
            _ => false,
        })
    })
}

/// What a failover with the check off may break.
fn allowed_without_the_check(case: &Case) -> BTreeSet<Checker> {
    data_loss_may_break(blind_at_a_failover(case))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(50)))]

    /// Inside the envelope: with the replica check on, a shard's failover breaks no safety rule.
    #[test]
    fn with_the_replica_check_a_shards_failover_breaks_no_safety_rule(
        case in clustered(true, failovers()),
    ) {
        let run = run(&case);
        let bad = safety(&run);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }

    /// Outside it: with the check off, a failover may break only what data loss can break.
    #[test]
    fn without_the_replica_check_a_shards_failover_breaks_only_what_data_loss_can(
        case in clustered(false, failovers()),
    ) {
        let run = run(&case);
        let allowed = allowed_without_the_check(&case);
        let bad = outside(&run, &allowed);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }

    /// A lock's slot moving while it is held loses nothing: every safety rule holds, with the
    /// replica check on or off.
    #[test]
    fn a_slot_migrating_during_a_hold_breaks_no_safety_rule(
        case in clustered(true, migrations()),
        sync in any::<bool>(),
    ) {
        let mut case = case;
        case.sync = sync;
        let run = run(&case);
        let bad = safety(&run);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }

    /// A primary partitioned from its replica and from some clients, and maybe failed over:
    /// with the check on, no safety rule breaks.
    #[test]
    fn with_the_replica_check_a_partitioned_primary_breaks_no_safety_rule(
        case in clustered(true, partitions()),
    ) {
        let run = run(&case);
        let bad = safety(&run);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }

    /// Same case, same trace: a cluster case with every cluster fault, run twice and run again
    /// from its text, gives byte-identical traces.
    #[test]
    fn the_same_cluster_case_gives_the_same_trace(
        case in clustered(true, (failovers(), migrations(), partitions())
            .prop_map(|(a, b, c)| [a, b, c].concat())
            .boxed()),
    ) {
        let first = run(&case);
        let again: Case = case.one_line().parse().unwrap();
        prop_assert_eq!(&again, &case);
        let second = run(&again);
        prop_assert_eq!(first.trace_hash, second.trace_hash);
        prop_assert_eq!(first.trace, second.trace);
    }

    /// With the check off, a partitioned primary's failover may break only what data loss can.
    #[test]
    fn without_the_replica_check_a_partitioned_primary_breaks_only_what_data_loss_can(
        case in clustered(false, partitions()),
    ) {
        let run = run(&case);
        let allowed = allowed_without_the_check(&case);
        let bad = outside(&run, &allowed);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
    }
}
