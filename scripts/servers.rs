//! Real Redis servers for the tests that need them: the one test helper every suite of the
//! workspace includes (`#[path]`) to reach a standalone server, a Redis Cluster or a Sentinel
//! group.
//!
//! `scripts/test` starts all three once and names them in `REDIS_URL`, `REDIS_CLUSTER_URLS` and
//! `REDIS_SENTINEL_URLS` / `REDIS_SENTINEL_MASTER`; a test then shares them (and never flushes,
//! pauses or fails them over). Where a variable is not set, as under a plain `cargo test`, the
//! test process starts that topology itself, once, through the same `scripts/topology.sh`: on
//! free loopback ports below the ephemeral range, with no persistence. The shell that started it
//! stays beside the test process and stops every server when that process ends, however it ends
//! (a panic, an abort, a signal), so nothing outlives a run.
//!
//! A program it needs that is missing (`redis-server`, `redis-sentinel`, `redis-cli`, `bash`)
//! fails the test with its name and how to install it; nothing passes by skipping.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The URL of a standalone Redis: `REDIS_URL`, or one of this process's own.
pub fn standalone_url() -> String {
    static OWN: OnceLock<Vec<String>> = OnceLock::new();
    if let Ok(url) = std::env::var("REDIS_URL") {
        return url;
    }
    OWN.get_or_init(|| start(Topology::Standalone))[0].clone()
}

/// The node URLs of a Redis Cluster of 3 primaries with a replica each: `REDIS_CLUSTER_URLS`,
/// or one of this process's own.
pub fn cluster_urls() -> Vec<String> {
    static OWN: OnceLock<Vec<String>> = OnceLock::new();
    if let Ok(urls) = std::env::var("REDIS_CLUSTER_URLS") {
        return urls.split(',').map(str::to_owned).collect();
    }
    OWN.get_or_init(|| start(Topology::Cluster)).clone()
}

/// The sentinels' URLs and the name they watch a primary (with one replica) under:
/// `REDIS_SENTINEL_URLS` and `REDIS_SENTINEL_MASTER`, or a group of this process's own.
pub fn sentinel() -> (Vec<String>, String) {
    static OWN: OnceLock<Vec<String>> = OnceLock::new();
    if let Ok(urls) = std::env::var("REDIS_SENTINEL_URLS") {
        let master = std::env::var("REDIS_SENTINEL_MASTER").unwrap_or_else(|_| {
            panic!("REDIS_SENTINEL_URLS is set without REDIS_SENTINEL_MASTER, the name to ask for")
        });
        return (urls.split(',').map(str::to_owned).collect(), master);
    }
    let own = OWN.get_or_init(|| start(Topology::Sentinel));
    let (master, urls) = own.split_first().expect("a master name and the sentinels");
    (urls.to_vec(), master.clone())
}

#[derive(Clone, Copy)]
enum Topology {
    Standalone,
    Cluster,
    Sentinel,
}

impl Topology {
    /// The shell that starts it and prints what the tests need, one value a line.
    fn start_script(self) -> &'static str {
        match self {
            Topology::Standalone => {
                "port=$(topology_free_port); topology_redis standalone \"$port\"; \
                 echo \"redis://127.0.0.1:$port/\""
            }
            Topology::Cluster => {
                "topology_start_cluster; for u in ${REDIS_CLUSTER_URLS//,/ }; do echo \"$u\"; done"
            }
            Topology::Sentinel => {
                "topology_start_sentinel; echo \"$REDIS_SENTINEL_MASTER\"; \
                 for u in ${REDIS_SENTINEL_URLS//,/ }; do echo \"$u\"; done"
            }
        }
    }

    fn programs(self) -> &'static [&'static str] {
        match self {
            Topology::Sentinel => &["bash", "redis-server", "redis-cli", "redis-sentinel"],
            _ => &["bash", "redis-server", "redis-cli"],
        }
    }
}

/// Starts `topology` in a shell that outlives this call and stops it when this process ends.
// The shell is left running on purpose: it watches this process and stops the servers after it.
#[allow(clippy::zombie_processes)]
fn start(topology: Topology) -> Vec<String> {
    for program in topology.programs() {
        assert!(
            on_path(program),
            "`{program}` is not installed, and this test needs it to start its own Redis (none is \
             named by REDIS_URL, REDIS_CLUSTER_URLS or REDIS_SENTINEL_URLS). Install Redis \
             (Debian/Ubuntu: `sudo apt-get install redis-server redis-sentinel redis-tools`; \
             macOS: `brew install redis`) or run `scripts/test`, which installs and starts it."
        );
    }
    let topology_sh = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/topology.sh");
    let script = format!(
        "set -e\n\
         source \"$0\"\n\
         trap topology_stop EXIT\n\
         trap 'exit 1' INT TERM HUP\n\
         topology_init\n\
         {start}\n\
         echo ready\n\
         exec 1>&-\n\
         while kill -0 {parent} 2>/dev/null; do sleep 0.2; done\n",
        start = topology.start_script(),
        parent = std::process::id(),
    );
    let mut shell = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(&topology_sh)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start bash for scripts/topology.sh");
    let stdout = shell.stdout.take().expect("the shell's output");
    let mut values = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read the shell's output");
        if line == "ready" {
            // The shell keeps running, watching this process; it is not waited for here.
            return values;
        }
        values.push(line);
    }
    let status = shell.wait().expect("wait for the shell");
    panic!("scripts/topology.sh could not start its servers ({status}); its messages are above");
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}
