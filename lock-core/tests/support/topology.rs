//! Replicated topologies of a test's own: a Redis Cluster of 3 primaries with a replica each, or a
//! primary with one replica watched by 3 sentinels, on free loopback ports in a scratch folder.
//!
//! The shared topologies `scripts/test` starts are never failed over, paused or flushed; a test
//! that does any of that starts one of these (the recipe is `scripts/topology.sh`'s). Each waits
//! until it is healthy before it is handed over, and stops every process (resuming a stopped one
//! first) and removes its folder when dropped, also when the test panics.

#![allow(dead_code)]

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One `redis-server` or `redis-sentinel` process of a topology.
#[derive(Clone, Debug)]
pub struct Node {
    pub port: u16,
    pub pid: u32,
}

impl Node {
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// `redis-cli -p <port> <args>`'s output.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }

    /// Stops the process (`SIGSTOP`) until the returned guard is dropped.
    pub fn stop(&self) -> Stopped {
        signal(self.pid, "-STOP");
        Stopped { pid: self.pid }
    }
}

/// A process stopped with `SIGSTOP`, resumed when this is dropped (also on a panic).
pub struct Stopped {
    pid: u32,
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.pid, "-CONT");
    }
}

/// The processes and folder of one topology; dropping it stops them all.
struct Processes {
    dir: PathBuf,
    nodes: Vec<Node>,
}

impl Drop for Processes {
    fn drop(&mut self) {
        for node in &self.nodes {
            // A stopped process ignores SIGTERM until it is resumed.
            signal(node.pid, "-CONT");
            signal(node.pid, "-TERM");
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for node in &self.nodes {
            while Path::new(&format!("/proc/{}", node.pid)).exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Processes {
    fn new(kind: &str) -> Processes {
        let dir = std::env::temp_dir().join(format!(
            "lock-core-{kind}-{}-{}",
            std::process::id(),
            RandomState::new().hash_one(Instant::now()) % 1_000_000
        ));
        std::fs::create_dir_all(&dir).expect("make the topology's folder");
        Processes {
            dir,
            nodes: Vec::new(),
        }
    }

    /// Starts a daemonized `redis-server` named `name` with extra `options`.
    fn redis(&mut self, name: &str, options: &[&str]) -> Node {
        let dir = self.dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port();
        let pidfile = dir.join("pid");
        let status = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .arg("--pidfile")
            .arg(&pidfile)
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("log"))
            .args(options)
            .stdout(Stdio::null())
            .status()
            .expect("redis-server not found: run the tests through `scripts/test`");
        assert!(status.success(), "redis-server {name} did not start");
        self.adopt(port, &pidfile)
    }

    /// Waits for the process behind `pidfile` to answer on `port`, and keeps it for the drop.
    fn adopt(&mut self, port: u16, pidfile: &Path) -> Node {
        wait_for(&format!("the server on port {port} to answer"), || {
            cli(port, &["ping"]).trim() == "PONG" && std::fs::read_to_string(pidfile).is_ok()
        });
        let pid = std::fs::read_to_string(pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let node = Node { port, pid };
        self.nodes.push(node.clone());
        node
    }
}

/// A Redis Cluster of 3 primaries and 3 replicas, one per primary.
pub struct OwnCluster {
    pub nodes: Vec<Node>,
    processes: Processes,
}

impl OwnCluster {
    /// Starts the six nodes, joins them with `redis-cli --cluster create`, and waits until every
    /// node serves all slots and every replica is in sync with its primary.
    pub fn start() -> OwnCluster {
        let mut processes = Processes::new("cluster");
        let mut nodes = Vec::new();
        for i in 1..=6 {
            let conf = processes.dir.join(format!("nodes-{i}.conf"));
            let conf = conf.to_str().unwrap().to_owned();
            nodes.push(processes.redis(
                &format!("cluster-{i}"),
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &conf,
                    "--cluster-node-timeout",
                    "5000",
                ],
            ));
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(node.addr());
        }
        let out = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli");
        assert!(
            out.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = OwnCluster { nodes, processes };
        cluster.wait_healthy();
        cluster
    }

    /// Every node's URL, for `ClusterBackend::connect`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Node::url).collect()
    }

    /// Waits until every node says `cluster_state:ok` and agrees with the others on who serves
    /// what, and every replica's link to its primary is up.
    pub fn wait_healthy(&self) {
        wait_for("the cluster to be healthy", || {
            let views: Vec<String> = self.nodes.iter().map(|n| self.shape_seen_by(n)).collect();
            self.nodes
                .iter()
                .all(|n| n.cli(&["cluster", "info"]).contains("cluster_state:ok"))
                && views.windows(2).all(|w| w[0] == w[1])
                && self.replicas().iter().all(|r| {
                    r.cli(&["info", "replication"])
                        .contains("master_link_status:up")
                })
        });
    }

    /// Who serves which slots, as `node` sees it: the primaries' ports and ranges, sorted.
    fn shape_seen_by(&self, node: &Node) -> String {
        let mut lines: Vec<String> = node
            .cli(&["cluster", "nodes"])
            .lines()
            .filter(|l| l.contains("master") && !l.contains("fail"))
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                format!("{} {}", f[1], f[8..].join(" "))
            })
            .collect();
        lines.sort();
        lines.join("\n")
    }

    /// The node serving `slot` now, and its replica.
    pub fn shard_of(&self, slot: u16) -> (Node, Node) {
        let table = self.nodes[0].cli(&["cluster", "nodes"]);
        let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split(' ').collect()).collect();
        let primary = rows
            .iter()
            .find(|f| {
                f[2].contains("master")
                    && f[8..].iter().any(|r| {
                        let (a, b) = r.split_once('-').unwrap_or((r, r));
                        match (a.parse::<u16>(), b.parse::<u16>()) {
                            (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                            _ => false,
                        }
                    })
            })
            .expect("a primary serves the slot");
        let replica = rows
            .iter()
            .find(|f| f[2].contains("slave") && f[3] == primary[0])
            .expect("the primary has a replica");
        (self.node_at(primary[1]), self.node_at(replica[1]))
    }

    /// The node whose `CLUSTER NODES` address is `addr` (`ip:port@bus`).
    fn node_at(&self, addr: &str) -> Node {
        let port: u16 = addr
            .split('@')
            .next()
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .expect("a node address");
        self.nodes
            .iter()
            .find(|n| n.port == port)
            .cloned()
            .expect("a node of this cluster")
    }

    /// The node id of `node`.
    pub fn id_of(&self, node: &Node) -> String {
        node.cli(&["cluster", "myid"]).trim().to_owned()
    }

    fn replicas(&self) -> Vec<Node> {
        self.nodes
            .iter()
            .filter(|n| n.cli(&["role"]).starts_with("slave"))
            .cloned()
            .collect()
    }

    /// `CLUSTER FAILOVER` on `replica`, then waits until it serves its primary's slots, every node
    /// agrees, and the old primary follows it.
    pub fn failover_to(&self, replica: &Node) {
        assert_eq!(replica.cli(&["cluster", "failover"]).trim(), "OK");
        wait_for("the replica to take over", || {
            replica.cli(&["role"]).starts_with("master")
        });
        self.wait_healthy();
    }
}

/// A primary with one replica, watched by 3 sentinels (quorum 2), named [`MASTER`].
pub struct OwnSentinel {
    pub primary: Node,
    pub replica: Node,
    pub sentinels: Vec<Node>,
    processes: Processes,
}

/// The name the sentinels watch.
pub const MASTER: &str = "ownmaster";

impl OwnSentinel {
    /// Starts the servers and sentinels, and waits until every sentinel knows the replica and the
    /// two other sentinels.
    pub fn start() -> OwnSentinel {
        let mut processes = Processes::new("sentinel");
        let primary = processes.redis("primary", &[]);
        let replica_of = primary.port.to_string();
        let replica = processes.redis("replica", &["--replicaof", "127.0.0.1", &replica_of]);
        let mut sentinels = Vec::new();
        for i in 1..=3 {
            let dir = processes.dir.join(format!("sentinel-{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            let port = free_port();
            let conf = dir.join("sentinel.conf");
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndaemonize yes\npidfile {d}/pid\nlogfile {d}/log\n\
                     dir {d}\nsentinel monitor {MASTER} 127.0.0.1 {p} 2\n\
                     sentinel down-after-milliseconds {MASTER} 5000\n\
                     sentinel failover-timeout {MASTER} 10000\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    d = dir.display(),
                    p = primary.port,
                ),
            )
            .unwrap();
            let status = Command::new("redis-sentinel")
                .arg(&conf)
                .stdout(Stdio::null())
                .status()
                .expect("redis-sentinel not found: run the tests through `scripts/test`");
            assert!(status.success(), "redis-sentinel {i} did not start");
            sentinels.push(processes.adopt(port, &dir.join("pid")));
        }
        let own = OwnSentinel {
            primary,
            replica,
            sentinels,
            processes,
        };
        own.wait_healthy();
        own
    }

    /// The sentinels' URLs, for `SentinelBackend::connect_sentinel`.
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinels.iter().map(Node::url).collect()
    }

    /// Waits until the replica is in sync and every sentinel knows it and the two others.
    pub fn wait_healthy(&self) {
        wait_for("the sentinel group to be healthy", || {
            let current = self.current_primary();
            let follower = if current.port == self.primary.port {
                &self.replica
            } else {
                &self.primary
            };
            follower
                .cli(&["info", "replication"])
                .contains("master_link_status:up")
                && self.sentinels.iter().all(|s| {
                    let info = s.cli(&["sentinel", "master", MASTER]);
                    let lines: Vec<&str> = info.lines().collect();
                    let field = |name: &str| {
                        lines
                            .iter()
                            .position(|l| *l == name)
                            .and_then(|i| lines.get(i + 1).copied())
                    };
                    field("num-slaves") == Some("1")
                        && field("num-other-sentinels") == Some("2")
                        && field("port") == Some(&*current.port.to_string())
                        && field("flags") == Some("master")
                })
        });
    }

    /// The server the first sentinel names as primary now.
    pub fn current_primary(&self) -> Node {
        let addr = self.sentinels[0].cli(&["sentinel", "get-master-addr-by-name", MASTER]);
        let port: u16 = addr
            .lines()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if port == self.replica.port {
            self.replica.clone()
        } else {
            self.primary.clone()
        }
    }

    /// `SENTINEL FAILOVER`, then waits until the other server is primary and the group is healthy.
    pub fn failover(&self) {
        let before = self.current_primary().port;
        assert_eq!(
            self.sentinels[0]
                .cli(&["sentinel", "failover", MASTER])
                .trim(),
            "OK"
        );
        wait_for("the sentinels to promote the replica", || {
            let now = self.current_primary();
            now.port != before && now.cli(&["role"]).starts_with("master")
        });
        self.wait_healthy();
    }

    /// `SENTINEL FAILOVER` with the old primary stopped (`SIGSTOP`) from the moment the sentinels
    /// name the new one until `cut_off` has passed; then waits until the group is healthy.
    ///
    /// Clients of the old primary get no answer meanwhile, so a hold renewed there cannot be
    /// confirmed for `cut_off`, and its key on the new primary is renewed by nobody: a hold whose
    /// lease is shorter than `cut_off` is lost, and its holder must be told. When the old primary
    /// resumes it still takes itself for the primary, with no replica, until a sentinel tells it
    /// to follow the new one.
    pub fn failover_cutting_off_the_old_primary(&self, cut_off: Duration) {
        let old = self.current_primary();
        assert_eq!(
            self.sentinels[0]
                .cli(&["sentinel", "failover", MASTER])
                .trim(),
            "OK"
        );
        wait_for("the sentinels to name the replica", || {
            self.current_primary().port != old.port
        });
        let stopped = old.stop();
        std::thread::sleep(cut_off);
        drop(stopped);
        wait_for("the replica to be primary", || {
            self.current_primary().cli(&["role"]).starts_with("master")
        });
        self.wait_healthy();
    }
}

/// `redis-cli -p <port> <args>`'s standard output (empty if it could not run).
pub fn cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn signal(pid: u32, which: &str) {
    let _ = Command::new("kill")
        .args([which, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Polls `ready` every 100 ms for up to 60 s (a loaded machine is slow to elect), then fails.
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

/// A loopback port below Linux's ephemeral range whose cluster bus port (+10,000) is free too, so
/// that no outgoing connection holds it when the server binds it.
fn free_port() -> u16 {
    let state = RandomState::new();
    for attempt in 0u32..1000 {
        let port = 12_000 + (state.hash_one(attempt) % 10_000) as u16;
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(port) && free(port + 10_000) {
            return port;
        }
    }
    panic!("no free loopback port");
}
