//! Worked example 3: the naive worker of example 1 on a primary with a replica and a Sentinel.
//! A failover inside the replica's lag loses the last writes, a grant among them: with the lock's
//! replica check off, a second client is granted the lock while the first still works under it;
//! with the check on, a grant is only reported once the replica has it, and no failover loses
//! one that anybody relies on.

use super::lost_update::{naive, no_lost_update};
use lock_core::{LockConfig, SyncReplicas};
use sim_tests::race::{Kind, Race, Server, Situation, Swarm};

/// The replica's lag behind the primary, and the failovers' lag.
const LAG_MS: u64 = 200;

pub fn race(check: Option<SyncReplicas>) -> Race {
    let config = LockConfig {
        sync_replicas: check,
        ..LockConfig::default()
    };
    Race::new("replica check")
        .server(Server::Sentinel {
            replicas: 1,
            lag_ms: LAG_MS,
        })
        .config(config)
        .clients(2, naive)
        .swarm(
            Swarm::default()
                .only(&[Kind::Failover])
                .window_ms(400)
                .lag_ms(LAG_MS, LAG_MS),
        )
        .invariant("no lost update", no_lost_update)
}

#[test]
fn without_the_replica_check_a_failover_hands_the_lock_to_two_owners() {
    let summary = race(None).explore();
    let failure = summary
        .failure
        .as_ref()
        .expect("two owners after a failover");
    println!("{failure}");
    assert!(summary.reached(Situation::FailoverLostGrant) > 0);
}

#[test]
fn with_the_replica_check_no_failover_inside_the_lag_does() {
    let summary = race(Some(SyncReplicas::default())).check();
    println!("{summary}");
}
