//! Helpers shared by lock-core's integration tests.
#![allow(dead_code)]

pub mod checks;
pub mod cluster;
#[path = "../../../scripts/servers.rs"]
pub mod servers;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The shared Redis: `scripts/test`'s, or this test process's own (`servers.rs`). Never flush,
/// pause or restart it.
pub fn redis_url() -> String {
    servers::standalone_url()
}

/// Settings for the real-time tests on replicated servers: a 3 s watchdog (renewal every second)
/// and an 800 ms response timeout, under `prefix`.
pub fn short_watchdog(prefix: &str) -> lock_core::LockConfig {
    lock_core::LockConfig {
        watchdog_timeout: lock_core::Millis(3000),
        response_timeout: Some(lock_core::Millis(800)),
        key_layout: lock_core::KeyLayout::new(prefix),
        ..lock_core::LockConfig::default()
    }
}

/// A key prefix no other test run uses.
pub fn unique_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t-{test}-{}-{nanos}", std::process::id())
}

/// A `redis-server` of the test's own, for tests that restart, pause or flush a server.
/// Stopped when dropped.
pub struct OwnRedis {
    child: Option<Child>,
    port: u16,
}

impl OwnRedis {
    /// Starts one on a free loopback port, with no persistence.
    pub fn start() -> OwnRedis {
        let port = free_port();
        let child = spawn_redis(port);
        let mut own = OwnRedis {
            child: Some(child),
            port,
        };
        own.wait_ready();
        own
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server and starts a new one on the same port (all data and scripts lost).
    pub fn restart(&mut self) {
        self.stop();
        self.child = Some(spawn_redis(self.port));
        self.wait_ready();
    }

    /// Kills the server.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "redis-server on port {} did not start within 10 s",
            self.port
        );
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn_redis(port: u16) -> Child {
    let bin = std::env::var("REDIS_SERVER_BIN").unwrap_or_else(|_| "redis-server".into());
    assert!(
        Path::new(&bin).is_absolute() || which(&bin),
        "{bin} not found: run the tests with `scripts/test`, which installs redis-server"
    );
    Command::new(bin)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start redis-server")
}

fn which(bin: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(bin).is_file()))
}
