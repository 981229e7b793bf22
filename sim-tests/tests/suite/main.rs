//! sim-tests' suites, one module per subject, in one test binary (`--test suite`): one link of
//! the simulator, lock-core and fake-redis instead of one per file. `replay.rs` stays a file of
//! its own beside this directory, as the command every failing case prints names it
//! (`cargo test -p sim-tests --test replay`).

#[path = "../common/mod.rs"]
mod common;

mod checkers_can_fail;
mod cluster;
mod data_loss;
mod determinism;
mod drift;
mod envelope;
mod failover;
mod fair;
mod layering;
mod liveness;
mod race;
mod read_write;
mod safety;
mod scripts_on_virtual_time;
