//! The production example against a real Redis (from `scripts/test`), and against none.

use std::process::Command;

fn production(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_production"))
        .args(args)
        .env("RUST_LOG", "info,lock_core=debug")
        .output()
        .expect("run the production example")
}

#[test]
fn an_unreachable_server_is_a_clear_error_not_a_panic() {
    // Port 1 on loopback: nothing listens there.
    let out = production(&[
        "--url",
        "redis://127.0.0.1:1/",
        "--name",
        "prod-unreachable",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect to Redis"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_lock_is_held_past_its_lease_and_released_on_a_real_redis() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| {
        panic!("REDIS_URL is not set: run the tests with `scripts/test`, which starts redis-server")
    });
    let name = format!("prod-example-{}", std::process::id());
    // A 3 s watchdog renews every second: 4 s of work outlives the lease.
    run_and_check(&["--url", &url, "--name", &name, "--work", "4000"]);
}

fn run_and_check(args: &[&str]) {
    let out = production(args);
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{log}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(log.contains("lock renewed"), "{log}");
    assert!(log.contains("outcome=Released"), "{log}");
}

#[test]
fn the_lock_is_held_past_its_lease_and_released_on_a_real_cluster() {
    let urls = std::env::var("REDIS_CLUSTER_URLS").unwrap_or_else(|_| {
        panic!("REDIS_CLUSTER_URLS is not set: run the tests with `scripts/test`, which starts a cluster")
    });
    let name = format!("prod-example-cluster-{}", std::process::id());
    run_and_check(&["--cluster", &urls, "--name", &name, "--work", "4000"]);
}

#[test]
fn the_lock_is_held_past_its_lease_and_released_through_sentinel() {
    let (urls, master) = match (
        std::env::var("REDIS_SENTINEL_URLS"),
        std::env::var("REDIS_SENTINEL_MASTER"),
    ) {
        (Ok(urls), Ok(master)) => (urls, master),
        _ => panic!(
            "REDIS_SENTINEL_URLS and REDIS_SENTINEL_MASTER are not set: run the tests with \
             `scripts/test`, which starts a Sentinel group"
        ),
    };
    let name = format!("prod-example-sentinel-{}", std::process::id());
    run_and_check(&[
        "--sentinel",
        &urls,
        "--master",
        &master,
        "--name",
        &name,
        "--work",
        "4000",
    ]);
}
