//! How fast the sans-IO lock machine steps: inputs per second through
//! [`LockMachine::handle`] and [`LockMachine::poll_output`], with no I/O at all.
//!
//! One iteration is one lock cycle of four inputs: an acquire request, the acquire script's reply
//! (granted), an unlock request, the release script's reply (deleted). The replies are scripted,
//! so this is the machine's own cost per input: the ceiling a driver (the tokio client, the
//! simulator) can reach before any backend is involved. Criterion reports it as elements/s, one
//! element per input. The cycle and its driver are lock-core's `machine_inputs` example's
//! (`rig.rs`, included here by its path), which counts the same cycle's instructions per input.
//!
//! The `client` group runs the same cycle through the tokio driver, [`LockClient`], over a backend
//! that answers every call at once without any I/O: what the client (the machine's mutex, a
//! boxed future and a timeout per call, the guard's status channel) adds to the machine, per
//! acquire+release pair, on a current-thread and on a two-worker runtime. Run: `cargo bench -p examples --bench machine`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lock_core::backend::{Backend, BackendError, PubSubEvent};
use lock_core::script::{ScriptCall, acquire, release};
use lock_core::{Lease, LockClient, LockConfig, Reply};
use std::time::{Duration, Instant};

#[path = "../../lock-core/examples/machine_inputs/rig.rs"]
mod rig;

use rig::{INPUTS_PER_CYCLE, Rig};

fn machine_steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("machine");
    group.throughput(Throughput::Elements(INPUTS_PER_CYCLE));
    let lease = Lease::from_millis(30_000).expect("a positive lease");
    let mut fixed = Rig::new(Some(lease));
    group.bench_function("lock_cycle_fixed_lease", |b| b.iter(|| fixed.cycle()));
    let mut watchdog = Rig::new(None);
    group.bench_function("lock_cycle_watchdog", |b| b.iter(|| watchdog.cycle()));
    group.finish();
}

/// A backend that answers at once: every acquire is granted, every release deletes the lock.
struct InstantBackend;

impl Backend for InstantBackend {
    async fn eval(&self, call: &ScriptCall) -> Result<Reply, BackendError> {
        if std::ptr::eq(call.script, &acquire::SCRIPT) {
            Ok(Reply::Nil)
        } else if std::ptr::eq(call.script, &release::SCRIPT) {
            Ok(Reply::Int(1))
        } else {
            Err(BackendError::Server(format!(
                "ERR the instant backend does not run {}",
                call.script.name
            )))
        }
    }

    async fn command(&self, _argv: &[bytes::Bytes]) -> Result<Reply, BackendError> {
        Ok(Reply::Nil)
    }

    async fn subscribe(&self, _channel: &bytes::Bytes) -> Result<(), BackendError> {
        Ok(())
    }

    async fn unsubscribe(&self, _channel: &bytes::Bytes) -> Result<(), BackendError> {
        Ok(())
    }

    async fn next_event(&self) -> PubSubEvent {
        std::future::pending().await
    }
}

fn client_pairs(c: &mut Criterion) {
    let mut group = c.benchmark_group("client");
    group.throughput(Throughput::Elements(1));
    let runtimes = [
        (
            "lock_pair_instant_backend_current_thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime"),
        ),
        (
            "lock_pair_instant_backend_multi_thread",
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime"),
        ),
    ];
    for (name, runtime) in &runtimes {
        let client = runtime.block_on(async {
            LockClient::new(InstantBackend, LockConfig::default()).expect("a valid config")
        });
        group.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                let client = client.clone();
                // In a spawned task, as a service's code runs (see compare.rs).
                runtime
                    .block_on(async move {
                        tokio::spawn(async move {
                            let started = Instant::now();
                            for _ in 0..iters {
                                let guard = client
                                    .lock_with_lease("bench:instant", Duration::from_secs(30))
                                    .await
                                    .expect("granted");
                                guard.unlock().await.expect("released");
                            }
                            started.elapsed()
                        })
                        .await
                    })
                    .expect("the benchmark task")
            })
        });
    }
    group.finish();
}

// `criterion_group!` makes a public function with no doc comment.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, machine_steps, client_pairs);
}
criterion_main!(group::benches);
