//! The client's API as a user meets it: the one acquire builder and its shorthands, the scoped
//! helper that stops work when the lease may be lost, and errors that are typed values.
//!
//! On tokio's paused time over the `fake-redis` crate, through `support::World`.

use crate::support;

use lock_core::{
    BackendError, ClientError, HoldMode, HoldState, InvalidLease, Lease, LockConfig, LockError,
    Millis, Operation, UnlockOutcome,
};
use std::sync::atomic::{AtomicBool, Ordering};
use support::{MS, World, ms, secs};

#[tokio::test(start_paused = true)]
async fn the_builder_takes_a_fenced_lock_with_a_fixed_lease_that_nothing_renews() {
    let world = World::new();
    let (a, ai) = world.client();
    let guard = a.acquire("orders").lease(secs(5)).fenced().await.unwrap();
    assert_eq!(guard.token(), Some(world.token_floor()));
    assert_eq!(
        guard.mode(),
        HoldMode::Lease(Lease::from_millis(5000).unwrap())
    );
    assert_eq!(world.pttl("orders"), 5000);
    world.sleep_until(secs(5) + MS).await;
    assert!(!world.exists("orders"), "expired with its lease");
    assert!(world.renewals(ai).is_empty());
    // The shorthand is the same chain.
    let (again, token) = a.lock_fenced_with_lease("orders", secs(5)).await.unwrap();
    assert_eq!(token, world.token_floor());
    assert_eq!(again.token(), Some(token));
    assert_eq!(world.pttl("orders"), 5000);
}

#[tokio::test(start_paused = true)]
async fn an_owner_re_enters_through_the_builder_and_its_own_try_lock_fenced() {
    let world = World::new();
    let (a, _) = world.client();
    let owner = a.new_owner().await.unwrap();
    let outer = a.acquire("orders").owner(&owner).fenced().await.unwrap();
    assert_eq!(outer.token(), Some(world.token_floor()));
    assert_eq!(outer.owner().id(), owner.id());
    let (inner, token) = owner
        .try_lock_fenced("orders", secs(1), None)
        .await
        .unwrap()
        .expect("a reentry does not wait");
    assert_eq!(token, world.token_floor() + 1);
    assert_eq!(owner.hold_count("orders").await.unwrap(), 2);
    assert_eq!(inner.unlock().await.unwrap(), UnlockOutcome::StillHeld);
    assert_eq!(outer.unlock().await.unwrap(), UnlockOutcome::Released);
}

#[tokio::test(start_paused = true)]
async fn a_zero_lease_is_refused_before_any_call() {
    let world = World::new();
    let (a, ai) = world.client();
    let err = a.acquire("orders").lease(ms(0)).await.unwrap_err();
    assert_eq!(err, LockError::InvalidLease(InvalidLease(Millis(0))));
    assert!(world.calls(ai, "acquire").is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_acquire_not_awaited_sends_nothing() {
    let world = World::new();
    let (a, ai) = world.client();
    drop(a.acquire("orders"));
    drop(std::future::IntoFuture::into_future(a.acquire("orders")));
    world.sleep_until(secs(1)).await;
    assert!(world.calls(ai, "acquire").is_empty());
}

#[tokio::test(start_paused = true)]
async fn run_gives_the_works_output_after_unlocking() {
    let world = World::new();
    let (a, _) = world.client();
    let guard = a.acquire("orders").fenced().await.unwrap();
    let first = world.token_floor();
    let work = async |guard: &lock_core::LockGuard| {
        // Past the first lease: the watchdog keeps it.
        tokio::time::sleep(secs(55)).await;
        guard.token()
    };
    // Spawned, to show the scoped future can move to another task.
    let token = tokio::spawn(guard.run(work)).await.unwrap().unwrap();
    assert_eq!(token, Some(first));
    assert_eq!(world.elapsed(), secs(55));
    assert!(!world.exists("orders"), "unlocked before run returned");
}

#[tokio::test(start_paused = true)]
async fn with_lock_stops_the_work_the_moment_the_lease_may_be_lost() {
    let world = World::new();
    let (a, ai) = world.client();
    let finished = AtomicBool::new(false);
    let result = a
        .with_lock("orders", async |_| {
            // Every renewal reply is lost for 25 s: valid_until passes at 29.698 s.
            world.drop_replies_for(ai, secs(25));
            tokio::time::sleep(secs(60)).await;
            finished.store(true, Ordering::SeqCst);
        })
        .await;
    let err = result.unwrap_err();
    assert_eq!(
        err,
        LockError::HoldLost {
            name: "orders".into(),
            state: HoldState::MayBeLost,
        }
    );
    assert!(
        err.to_string().contains("the hold is possibly lost"),
        "{err}"
    );
    assert_eq!(world.elapsed(), secs(30) - ms(302));
    assert!(!finished.load(Ordering::SeqCst), "the work was dropped");
    // The guard went with it, released in the background.
    world.sleep_until(secs(31)).await;
    assert!(!world.exists("orders"));
}

/// A process stopped past its lease (a GC pause, `SIGSTOP`) wakes with its work ready and the
/// driver not yet run: the scoped work is still stopped at its next await, because `lost()` reads
/// the clock as well as the driver's report. Real time on a current-thread runtime: the work
/// blocks the one thread, as a stopped process, then wakes itself without the timer wheel.
#[tokio::test]
async fn run_stops_work_that_resumes_past_valid_until_before_the_driver_runs() {
    let world = World::new();
    let (a, _) = world.client();
    let guard = a.acquire("orders").lease(secs(1)).await.unwrap();
    let wrote = AtomicBool::new(false);
    let result = guard
        .run(async |_| {
            std::thread::sleep(secs(1) + ms(200));
            woken_once().await;
            wrote.store(true, Ordering::SeqCst);
        })
        .await;
    assert_eq!(
        result.unwrap_err(),
        LockError::HoldLost {
            name: "orders".into(),
            state: HoldState::MayBeLost,
        }
    );
    assert!(
        !wrote.load(Ordering::SeqCst),
        "the work stepped past its lease"
    );
}

/// Pending once, having woken its own task: the task runs again from the scheduler's queue,
/// before the runtime looks at its timers.
async fn woken_once() {
    let mut first = true;
    std::future::poll_fn(|cx| {
        if std::mem::take(&mut first) {
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
}

#[test]
fn a_client_made_outside_a_tokio_runtime_is_an_error_not_a_panic() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (backend, _) = runtime.block_on(async { World::new().backend() });
    // The runtime exists but is not running here.
    let err = lock_core::LockClient::new(backend, LockConfig::default()).expect_err("refused");
    assert_eq!(err, ClientError::NoRuntime);
    assert!(err.to_string().contains("tokio runtime"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_call_keeps_the_servers_error_as_its_source() {
    let world = World::new();
    let (a, _) = world.client();
    world.set("orders", "not a lock");
    let err = a.lock("orders").await.unwrap_err();
    assert!(
        matches!(
            err,
            LockError::Backend {
                operation: Operation::Acquire,
                ..
            }
        ),
        "{err}"
    );
    let source = std::error::Error::source(&err).and_then(|e| e.downcast_ref::<BackendError>());
    assert!(
        matches!(source, Some(BackendError::Server(text)) if text.starts_with("WRONGTYPE")),
        "{source:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_handles_say_whose_they_are_in_debug_output() {
    let world = World::new();
    let (a, _) = world.client();
    let guard = a.lock("orders").await.unwrap();
    let id = a.client_id().to_owned();
    assert!(format!("{a:?}").contains(&id));
    assert!(format!("{:?}", guard.owner()).contains(&id));
    let guard_text = format!("{guard:?}");
    assert!(
        guard_text.contains("orders") && guard_text.contains("Valid"),
        "{guard_text}"
    );
    let acquire = format!("{:?}", a.acquire("orders").wait(secs(1)).fenced());
    assert!(
        acquire.contains("Budget") && acquire.contains("fenced: true"),
        "{acquire}"
    );
}
