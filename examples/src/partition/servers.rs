//! The Redis processes of a run, each in its own namespace: a primary with two replicas and three
//! Sentinels, or a Cluster of three primaries and three replicas.
//!
//! Every Redis listens on `127.0.0.1:6380` (and, for the cluster bus, its own address) and
//! announces port 6379, where its front-door proxy (`proxy.rs`) listens on its address: every
//! client, replica and sentinel reaches it through the proxy, where latency and loss are added.
//! Nothing persists (no RDB, no AOF): a killed server comes back empty, as a crashed one whose
//! disk was not synced would.

use super::net::{Net, Ns, run};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The Sentinel group's name.
pub const MASTER: &str = "pt";
/// The port Redis listens on inside its namespace (behind the proxy).
pub const INNER_PORT: u16 = 6380;
/// The port everyone dials: the proxy's.
pub const PORT: u16 = 6379;
/// The sentinels' port.
pub const SENTINEL_PORT: u16 = 26379;

/// Which servers a run starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Topology {
    /// A primary, two replicas, three Sentinels.
    Sentinel,
    /// A Redis Cluster: three primaries, three replicas.
    Cluster,
}

impl Topology {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Topology::Sentinel => "sentinel",
            Topology::Cluster => "cluster",
        }
    }
}

/// Starts `program` with `args` inside `ns`, its output appended to `log`.
pub fn spawn_in(ns: &Ns, program: &str, args: &[&str], log: &Path) -> io::Result<Child> {
    super::net::check_not_stopping()?;
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let err = out.try_clone()?;
    Command::new("ip")
        .args(["netns", "exec", &ns.name, program])
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
}

/// Runs `redis-cli` inside `ns` against `host:port` with a 2-second bound (a paused or cut-off
/// server must not hang the orchestrator).
pub fn cli(ns: &Ns, host: &str, port: u16, args: &[&str]) -> io::Result<String> {
    let port = port.to_string();
    let mut all = vec![
        "2",
        "ip",
        "netns",
        "exec",
        &ns.name,
        "redis-cli",
        "-h",
        host,
        "-p",
        &port,
    ];
    all.extend_from_slice(args);
    run("timeout", &all)
}

/// One Redis server of the run.
#[derive(Debug)]
pub struct Server {
    /// Its namespace.
    pub ns: Ns,
    /// Its config file (kept for a restart).
    pub conf: PathBuf,
    /// The running process, if it runs.
    pub process: Option<Child>,
}

impl Server {
    /// The process id, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(Child::id)
    }

    /// Starts (or restarts) the server from its config.
    pub fn start(&mut self, log: &Path) -> io::Result<()> {
        let conf = self.conf.to_string_lossy().into_owned();
        self.process = Some(spawn_in(&self.ns, "redis-server", &[&conf], log)?);
        Ok(())
    }

    /// Kills the server (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Asks the server itself (on its inner port) a question.
    pub fn ask(&self, args: &[&str]) -> io::Result<String> {
        cli(&self.ns, "127.0.0.1", INNER_PORT, args)
    }
}

/// The config of server `i` at `ip`, with its data in `dir`.
fn server_conf(topology: Topology, ip: &str, dir: &Path, primary_ip: Option<&str>) -> String {
    let mut conf = format!(
        "port {INNER_PORT}\nbind 127.0.0.1 {ip}\nprotected-mode no\nsave \"\"\nappendonly no\n\
         dir {}\nreplica-announce-ip {ip}\nreplica-announce-port {PORT}\n",
        dir.display()
    );
    match topology {
        Topology::Sentinel => {
            if let Some(primary) = primary_ip {
                conf.push_str(&format!("replicaof {primary} {PORT}\n"));
            }
        }
        Topology::Cluster => conf.push_str(&format!(
            "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\n\
             cluster-announce-ip {ip}\ncluster-announce-port {PORT}\n\
             cluster-port {bus}\ncluster-announce-bus-port {bus}\n",
            bus = PORT + 10_000
        )),
    }
    conf
}

fn sentinel_conf(ip: &str, primary_ip: &str, dir: &Path) -> String {
    format!(
        "port {SENTINEL_PORT}\nbind 127.0.0.1 {ip}\nprotected-mode no\ndir {}\n\
         sentinel announce-ip {ip}\nsentinel monitor {MASTER} {primary_ip} {PORT} 2\n\
         sentinel down-after-milliseconds {MASTER} 1000\nsentinel failover-timeout {MASTER} 3000\n\
         sentinel parallel-syncs {MASTER} 1\n",
        dir.display()
    )
}

/// The run's servers.
#[derive(Debug)]
pub struct Servers {
    /// Which topology.
    pub topology: Topology,
    /// The Redis servers (the first is the Sentinel group's first primary).
    pub redis: Vec<Server>,
    /// The sentinels (none on a cluster) and their processes.
    pub sentinels: Vec<(Ns, Child)>,
    /// The front-door proxies, one per server, in the server's namespace.
    pub proxies: Vec<Child>,
    /// The slot of the lock names' hash tag (cluster only).
    pub slot: Option<u16>,
    dir: PathBuf,
}

impl Servers {
    /// Makes the namespaces and starts the servers, their proxies and the sentinels, and waits
    /// until the topology is serving.
    pub fn start(
        topology: Topology,
        net: &mut Net,
        dir: &Path,
        proxy: &dyn Fn(&Ns, usize) -> io::Result<Child>,
    ) -> io::Result<Servers> {
        let count = match topology {
            Topology::Sentinel => 3,
            Topology::Cluster => 6,
        };
        let mut servers = Servers {
            topology,
            redis: Vec::new(),
            sentinels: Vec::new(),
            proxies: Vec::new(),
            slot: None,
            dir: dir.to_owned(),
        };
        let primary_ip = format!("{}.10", super::net::SUBNET);
        for i in 0..count {
            let ns = net.add(&format!("r{i}"), 10 + i as u8)?;
            let data = dir.join(format!("r{i}"));
            std::fs::create_dir_all(&data)?;
            let replica_of = (i > 0).then_some(primary_ip.as_str());
            let conf = dir.join(format!("r{i}.conf"));
            std::fs::write(&conf, server_conf(topology, &ns.ip, &data, replica_of))?;
            servers.proxies.push(proxy(&ns, i)?);
            let mut server = Server {
                ns,
                conf,
                process: None,
            };
            server.start(&servers.log(i))?;
            servers.redis.push(server);
        }
        servers.wait_all_up()?;
        match topology {
            Topology::Sentinel => servers.start_sentinels(net, &primary_ip)?,
            Topology::Cluster => servers.create_cluster()?,
        }
        Ok(servers)
    }

    /// Server `i`'s log.
    pub fn log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("r{i}.log"))
    }

    fn wait_all_up(&self) -> io::Result<()> {
        for server in &self.redis {
            wait_for(|| server.ask(&["PING"]).is_ok_and(|r| r.contains("PONG")))?;
        }
        Ok(())
    }

    fn start_sentinels(&mut self, net: &mut Net, primary_ip: &str) -> io::Result<()> {
        for i in 0..3 {
            let ns = net.add(&format!("s{i}"), 30 + i as u8)?;
            let conf = self.dir.join(format!("s{i}.conf"));
            std::fs::write(&conf, sentinel_conf(&ns.ip, primary_ip, &self.dir))?;
            let conf = conf.to_string_lossy().into_owned();
            let log = self.dir.join(format!("s{i}.log"));
            let child = spawn_in(&ns, "redis-sentinel", &[&conf], &log)?;
            self.sentinels.push((ns, child));
        }
        // Serving: the replicas are in sync and every sentinel names the primary.
        for server in &self.redis[1..] {
            wait_for(|| {
                server
                    .ask(&["INFO", "replication"])
                    .is_ok_and(|r| r.contains("master_link_status:up"))
            })?;
        }
        for (ns, _) in &self.sentinels {
            wait_for(|| {
                cli(
                    ns,
                    "127.0.0.1",
                    SENTINEL_PORT,
                    &["SENTINEL", "replicas", MASTER],
                )
                .is_ok_and(|r| r.matches("flags").count() >= 2)
            })?;
        }
        Ok(())
    }

    fn create_cluster(&mut self) -> io::Result<()> {
        let mut args = vec!["--cluster".to_owned(), "create".to_owned()];
        args.extend(self.redis.iter().map(|s| format!("{}:{PORT}", s.ns.ip)));
        args.extend(["--cluster-replicas", "1", "--cluster-yes"].map(str::to_owned));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut all = vec![
            "30",
            "ip",
            "netns",
            "exec",
            &self.redis[0].ns.name,
            "redis-cli",
        ];
        all.extend_from_slice(&args);
        run("timeout", &all)?;
        for server in &self.redis {
            wait_for(|| {
                server
                    .ask(&["CLUSTER", "INFO"])
                    .is_ok_and(|r| r.contains("cluster_state:ok"))
            })?;
        }
        let slot = self.redis[0].ask(&["CLUSTER", "KEYSLOT", "{pt}"])?;
        self.slot = slot.trim().parse().ok();
        // Serving the lock's slot: its shard's replica has synced.
        wait_for(|| self.shard_replica_synced())?;
        Ok(())
    }

    fn shard_replica_synced(&self) -> bool {
        let Some(primary) = self.primary() else {
            return false;
        };
        self.replicas_of(primary).iter().any(|&r| {
            self.redis[r]
                .ask(&["INFO", "replication"])
                .is_ok_and(|i| i.contains("master_link_status:up"))
        })
    }

    /// The address the clients are given: the sentinels' or the cluster nodes'.
    pub fn client_urls(&self) -> Vec<String> {
        match self.topology {
            Topology::Sentinel => self
                .sentinels
                .iter()
                .map(|(ns, _)| format!("redis://{}:{SENTINEL_PORT}/", ns.ip))
                .collect(),
            Topology::Cluster => self
                .redis
                .iter()
                .map(|s| format!("redis://{}:{PORT}/", s.ns.ip))
                .collect(),
        }
    }

    /// The index of the server that is the lock's primary now, as the sentinels (or the
    /// cluster's view of the lock's slot) name it; `None` if nobody answers.
    pub fn primary(&self) -> Option<usize> {
        let ip = match self.topology {
            Topology::Sentinel => self.sentinels.iter().find_map(|(ns, _)| {
                let args = ["SENTINEL", "get-master-addr-by-name", MASTER];
                let out = cli(ns, "127.0.0.1", SENTINEL_PORT, &args).ok()?;
                out.lines().next().map(str::to_owned)
            }),
            Topology::Cluster => self.cluster_primary_ip(),
        }?;
        self.redis.iter().position(|s| s.ns.ip == ip.trim())
    }

    fn cluster_nodes(&self) -> Option<String> {
        self.redis
            .iter()
            .find_map(|s| s.ask(&["CLUSTER", "NODES"]).ok().filter(|n| !n.is_empty()))
    }

    fn cluster_primary_ip(&self) -> Option<String> {
        let slot = self.slot?;
        let nodes = self.cluster_nodes()?;
        nodes.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?;
            if !flags.contains("master") || flags.contains("fail") {
                return None;
            }
            let serves = fields.iter().skip(8).any(|range| slot_in(range, slot));
            serves.then(|| fields[1].split(':').next().unwrap_or("").to_owned())
        })
    }

    /// The servers replicating `primary` (on a Sentinel group, every other server).
    pub fn replicas_of(&self, primary: usize) -> Vec<usize> {
        match self.topology {
            Topology::Sentinel => (0..self.redis.len()).filter(|&i| i != primary).collect(),
            Topology::Cluster => {
                let ip = &self.redis[primary].ns.ip;
                let nodes = self.cluster_nodes().unwrap_or_default();
                let id = nodes
                    .lines()
                    .find(|l| {
                        l.split_whitespace()
                            .nth(1)
                            .is_some_and(|a| a.starts_with(&format!("{ip}:")))
                    })
                    .and_then(|l| l.split_whitespace().next())
                    .unwrap_or("")
                    .to_owned();
                nodes
                    .lines()
                    .filter(|l| !id.is_empty() && l.split_whitespace().nth(3) == Some(id.as_str()))
                    .filter_map(|l| l.split_whitespace().nth(1))
                    .filter_map(|a| a.split(':').next())
                    .filter_map(|a| self.redis.iter().position(|s| s.ns.ip == a))
                    .collect()
            }
        }
    }
}

/// Whether a `CLUSTER NODES` slot field (`5-100` or `7`) holds `slot`.
fn slot_in(range: &str, slot: u16) -> bool {
    let mut ends = range.split('-');
    let lo = ends.next().and_then(|s| s.parse::<u16>().ok());
    let hi = ends.next().and_then(|s| s.parse::<u16>().ok()).or(lo);
    matches!((lo, hi), (Some(lo), Some(hi)) if lo <= slot && slot <= hi)
}

/// Polls `ready` every 100 ms for up to 20 s.
pub fn wait_for(mut ready: impl FnMut() -> bool) -> io::Result<()> {
    for _ in 0..200 {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(io::Error::other("the servers did not come up within 20 s"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ranges_and_single_slots_are_read() {
        assert!(slot_in("0-5460", 5460));
        assert!(!slot_in("5461-10922", 5460));
        assert!(slot_in("7", 7));
        assert!(!slot_in("[7->-abc]", 7));
    }
}
