//! The partition harness: the lock on real Redis processes, each in a network namespace of its
//! own, under a nemesis that partitions, pauses, kills and slows them, with a recorded history and
//! a checker over it, after Jepsen's method.
//!
//! The parts and the one way they depend on each other:
//! - pure, and tested as such: [`history`] (the record format), [`checker`] (what a history
//!   says), [`nemesis`] (the schedule drawn from a seed), [`report`] (the figures across runs),
//!   [`draw`] (a history as a timeline);
//! - the processes' roles: [`proxy`] (latency and loss on a server's front door), [`resource`]
//!   (the fencing resource), [`client`] (the workload);
//! - the orchestration: [`net`] (namespaces, bridge, partition rules, teardown), [`servers`] (the
//!   Redis and Sentinel processes), [`run`] (one run, start to checked history).
//!
//! The binary `partition` (`examples/src/bin/partition.rs`) is every role: the orchestrator
//! starts it again inside each namespace for the proxy, resource and client roles, so one build
//! gives every process of the harness. `scripts/partition-test` runs it as root.

pub mod checker;
pub mod client;
pub mod draw;
pub mod history;
pub mod nemesis;
pub mod net;
pub mod proxy;
pub mod report;
pub mod resource;
pub mod run;
pub mod servers;
