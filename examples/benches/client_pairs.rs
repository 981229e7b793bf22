//! A fixed number of uncontended lock pairs on the in-process fake, for instruction counts: what
//! the lock client costs per pair beyond the same two scripts sent by hand through the same
//! backend.
//!
//! `--side ours` takes and releases one lock `--pairs` times through [`LockClient`]
//! (`lock_with_lease` + `unlock`) over a [`FakeBackend`]; `--side raw` sends the acquire and
//! release scripts of the same pairs straight through that backend's `eval` (one `EVALSHA` each,
//! as `compare`'s raw side does over a real connection). Both run in a task spawned on a
//! current-thread runtime, on an engine with the lock's native twins. Run each under callgrind
//! at two pair counts; the difference of the two counts over the pairs between them is the cost
//! of one pair, setup excluded:
//!
//! ```text
//! cargo bench -p examples --bench client_pairs --no-run
//! valgrind --tool=callgrind target/release/deps/client_pairs-* --side ours --pairs 20000
//! ```

use clap::Parser;
use fake_redis::{NodeId, TokioClock, shared};
use lock_core::backend::Backend;
use lock_core::fake::FakeBackend;
use lock_core::keys::{KeyLayout, Owner, RequestId};
use lock_core::script::{acquire, release};
use lock_core::{Lease, LockClient, LockConfig, Millis, Reply};
use std::time::Duration;

/// Uncontended lock pairs on the fake, through the client or by hand.
#[derive(Parser, Debug)]
struct Args {
    /// `ours` (the lock client) or `raw` (the scripts through the backend by hand).
    #[arg(long, default_value = "ours")]
    side: String,
    /// How many acquire+release pairs.
    #[arg(long, default_value_t = 10_000)]
    pairs: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let pairs = args.pairs;
    let done = runtime.block_on(async move {
        tokio::spawn(async move {
            let engine = shared(lock_core::fake::engine(TokioClock::new()));
            let backend = FakeBackend::new(engine, NodeId(2));
            match args.side.as_str() {
                "ours" => ours(backend, pairs).await,
                "raw" => raw(backend, pairs).await,
                other => panic!("--side is ours or raw, not {other}"),
            }
        })
        .await
        .expect("the pairs' task")
    });
    println!("{done} pairs");
}

async fn ours(backend: FakeBackend, pairs: u64) -> u64 {
    let client = LockClient::new(backend, LockConfig::default()).expect("a valid config");
    for _ in 0..pairs {
        let guard = client
            .lock_with_lease("bench:pairs", Duration::from_secs(30))
            .await
            .expect("granted");
        guard.unlock().await.expect("released");
    }
    pairs
}

async fn raw(backend: FakeBackend, pairs: u64) -> u64 {
    let keys = KeyLayout::default().lock("bench:pairs");
    let owner = Owner::new("0123456789abcdef0123456789abcdef", 1);
    let lease = Lease::from_millis(30_000).expect("a positive lease");
    let latch = Millis(12_000);
    for script in [&acquire::SCRIPT, &release::SCRIPT] {
        backend
            .command(&script.load_argv())
            .await
            .expect("SCRIPT LOAD");
    }
    for pair in 0..pairs {
        let request = RequestId(u128::from(pair) * 2 + 1);
        let take = acquire::call(&keys, &request, lease, &owner, latch);
        let granted = backend.eval(&take).await.expect("the acquire's reply");
        assert_eq!(granted, Reply::Nil, "the raw acquire was refused");
        let request = RequestId(u128::from(pair) * 2 + 2);
        let give = release::call(&keys, &request, lease, &owner, latch);
        let released = backend.eval(&give).await.expect("the release's reply");
        assert_eq!(released, Reply::Int(1), "the raw release deleted nothing");
    }
    pairs
}
