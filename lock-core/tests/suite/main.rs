//! lock-core's integration tests, one module per subject, in one test binary (`--test suite`):
//! one link of tokio, the redis crate and fake-redis instead of one per file, which was most of
//! the workspace's test build. A test that needs a process of its own belongs in a file of its
//! own beside this directory. `scripts/test` runs the `sentinel`, `cluster` and
//! `cluster_contention` modules a second time, on the fake's topology doors.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/delay_proxy.rs"]
mod delay_proxy;
#[path = "../machine_rig/mod.rs"]
mod machine_rig;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/through_failover.rs"]
mod through_failover;
#[path = "../support/topology.rs"]
mod topology;

mod aof_sync;
mod api;
mod client;
mod cluster;
mod cluster_contention;
mod differential;
mod fair_lock;
mod fair_scripts;
mod layering;
mod lock_scripts;
mod machine;
mod multi_lock;
mod own_cluster;
mod own_sentinel;
mod read_write;
mod redis_backend_faults;
// Needs a JDK and the Redisson driver jar: `--features test-redisson`, which scripts/test turns on.
#[cfg(feature = "test-redisson")]
mod redisson;
mod renewal_slots;
mod replica_sync;
mod script_bounds;
mod script_rules;
mod sentinel;
mod standalone;
