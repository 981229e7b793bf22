//! The production example against a real Redis (from `scripts/test`), and against none.

use std::process::Command;

#[path = "../../scripts/servers.rs"]
mod servers;

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
    let url = servers::standalone_url();
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
    let urls = servers::cluster_urls().join(",");
    let name = format!("prod-example-cluster-{}", std::process::id());
    run_and_check(&["--cluster", &urls, "--name", &name, "--work", "4000"]);
}

#[test]
fn the_lock_is_held_past_its_lease_and_released_through_sentinel() {
    let (urls, master) = servers::sentinel();
    let urls = urls.join(",");
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
