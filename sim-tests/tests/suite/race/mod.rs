//! The race harness (`sim_tests::race`) on its three worked examples, each a chapter of the book,
//! and the harness's own promises: determinism, exact replay, shrinking, coverage.

mod harness;
mod lost_update;
mod own_lock;
mod replica_check;
