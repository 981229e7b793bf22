//! Programs that teach the watchdog: scenarios on virtual time, rendered as timelines, and one
//! page of them all.

pub mod page;
pub mod partition;
pub mod scenarios;
/// The renderer of timelines (text and SVG): it lives in `sim-tests`, whose race harness draws its
/// failures with it, and is re-exported here under its old path.
pub use sim_tests::timeline;

/// The Rust snippets of the README and the book, compiled (and, unless marked `no_run`, run) as
/// doc-tests of this crate, whose dev-dependencies they may use: a snippet that no longer builds
/// fails `cargo test`.
#[cfg(doctest)]
pub mod book {
    #[doc = include_str!("../../README.md")]
    pub struct Readme;
    #[doc = include_str!("../../docs/book/src/lock/guide.md")]
    pub struct LockGuide;
    #[doc = include_str!("../../docs/book/src/lock/redisson.md")]
    pub struct Redisson;
    #[doc = include_str!("../../docs/book/src/fake/testing.md")]
    pub struct TestingOnTheFake;
    #[doc = include_str!("../../docs/book/src/race/README.md")]
    pub struct RaceHarness;
    #[doc = include_str!("../../docs/book/src/race/lost-update.md")]
    pub struct RaceLostUpdate;
    #[doc = include_str!("../../docs/book/src/race/own-lock.md")]
    pub struct RaceOwnLock;
    #[doc = include_str!("../../docs/book/src/race/replica-check.md")]
    pub struct RaceReplicaCheck;
}
