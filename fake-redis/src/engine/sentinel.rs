//! A Sentinel: what clients ask to find a topology's primary, and the failover that moves it.
//!
//! Clients of a Sentinel-watched primary never connect to a fixed address. They ask a sentinel
//! (`SENTINEL get-master-addr-by-name`, `SENTINEL masters`, `SENTINEL replicas`), check with
//! `ROLE` that the server they reach is the primary, and listen on the sentinel's `+switch-master`
//! channel for a failover. The fake's Sentinel is an [`Engine`] of its own (so connections,
//! `HELLO`, `AUTH`, `CLIENT` and pub/sub are the engine's, byte for byte, and every front door
//! serves it unchanged) whose command table is the sentinel's (`cmd/sentinel.rs`), watching the
//! nodes of one [`Topology`] on the same clock.
//!
//! It watches by reading the nodes' engines, not by pinging them: every reply is a pure function
//! of the nodes' state and the clock, and its times (`last-ok-ping-reply`, `info-refresh`) are
//! those of a sentinel that pings every second and refreshes `INFO` every ten, counted from its
//! start. A node running a script is not waited for: the sentinel answers from what it read last,
//! as a real one answers from its last `INFO`.
//!
//! `SENTINEL failover` is a real one's, done at once instead of over a few seconds: the replica
//! with the most data applied is promoted with what it has (`REPLICAOF NO ONE`, so the writes still
//! on the way are lost, the race a lock must survive), then the old primary and the other
//! replicas follow it with a full sync, as the real sentinel reconfigures them, and the events a
//! real failover publishes go out in its order, `+switch-master` among them. The command returns
//! once the switch is done, so a test that asked for it sees the new primary at once.

use super::script_watch::{ScriptWatch, lock, lock_unless_busy};
use crate::clock::Clock;
use crate::engine::replication::Topology;
use crate::engine::{Engine, EngineConfig};
use crate::resp::Frame;
use bytes::Bytes;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// The master name a sentinel watches unless told otherwise (Redis's examples').
pub const DEFAULT_MASTER_NAME: &str = "mymaster";

/// A fresh sentinel's `down-after-milliseconds`, `failover-timeout` and `parallel-syncs`.
const DOWN_AFTER_MS: i64 = 30_000;
const FAILOVER_TIMEOUT_MS: i64 = 180_000;
const PARALLEL_SYNCS: i64 = 1;

/// How often a real sentinel pings each node and refreshes its `INFO`.
const PING_PERIOD_MS: i64 = 1_000;
const INFO_PERIOD_MS: i64 = 10_000;

/// The seed's stream for the sentinel's ids.
const ID_STREAM: u64 = 0x7365_6e74; // "sent"

/// What a sentinel knows of one node.
struct Watched {
    engine: Arc<Mutex<Engine>>,
    scripts: Arc<ScriptWatch>,
    port: u16,
    run_id: String,
    /// What it read last: the port of the primary the node follows, and its offset.
    follows: Option<u16>,
    offset: i64,
}

/// A sentinel's state (see the [module docs](self)).
pub(crate) struct Sentinel {
    master_name: String,
    /// The address the topology's nodes announce (their `ROLE` says the same).
    host: String,
    nodes: Vec<Watched>,
    /// The node it names as primary.
    primary: usize,
    config_epoch: i64,
    myid: String,
    started_at: i64,
    /// When the primary last changed (`role-reported-time`).
    role_since: i64,
}

/// Why `SENTINEL failover` did not fail over.
pub(crate) enum FailoverRefused {
    /// No replica can be promoted (`-NOGOODSLAVE`).
    NoGoodReplica,
    /// A node it must reconfigure is running a script.
    Busy(u16),
}

/// One event a failover publishes: its channel and message.
pub(crate) type Event = (String, String);

impl Topology {
    /// A Sentinel watching this topology's primary as `master_name`, as an engine of its own on
    /// the topology's clock: serve it on a port of its own (the TCP server does), or drive it
    /// in-process like any engine.
    pub fn sentinel(&self, master_name: &str) -> Engine {
        let (clock, config, now, host) = {
            let primary = self.primary().lock().unwrap_or_else(|e| e.into_inner());
            let clock: Arc<dyn Clock> = primary.clock.clone();
            let config = EngineConfig {
                seed: crate::seed::Seed(primary.config.seed).draw(ID_STREAM, 0, 0),
                requirepass: None,
                ..EngineConfig::default()
            };
            let host = primary.announced_host().to_owned();
            (clock, config, primary.now(), host)
        };
        let seed = config.seed;
        let nodes = self
            .nodes()
            .enumerate()
            .map(|(i, (_, engine))| {
                let (scripts, port, follows, offset) = {
                    let mut e = engine.lock().unwrap_or_else(|e| e.into_inner());
                    let port = e.announced_port();
                    let follows = e.followed_primary_port().map(|p| p as u16);
                    (e.script_watch(), port, follows, e.repl_offset())
                };
                Watched {
                    engine: Arc::clone(engine),
                    scripts,
                    port,
                    run_id: hex_id(seed, 1 + i as u64),
                    follows,
                    offset,
                }
            })
            .collect();
        let mut engine = Engine::with_config(clock, config);
        engine.sentinel = Some(Box::new(Sentinel {
            master_name: master_name.to_owned(),
            host,
            nodes,
            primary: 0,
            config_epoch: 0,
            myid: hex_id(seed, 0),
            started_at: now,
            role_since: now,
        }));
        engine
    }
}

/// A 40-hex-digit id drawn from the seed (Redis draws run ids at random).
fn hex_id(seed: u64, which: u64) -> String {
    let s = crate::seed::Seed(seed);
    let mut id = String::with_capacity(48);
    for i in 0..3 {
        let _ = write!(id, "{:016x}", s.draw(ID_STREAM, which, i));
    }
    id.truncate(40);
    id
}

fn bulk(s: impl Into<String>) -> Frame {
    Frame::Bulk(Bytes::from(s.into()))
}

fn field(name: &'static str, value: impl Into<String>) -> (Frame, Frame) {
    (
        Frame::Bulk(Bytes::from_static(name.as_bytes())),
        bulk(value),
    )
}

impl Sentinel {
    /// Whether `name` is the master it watches.
    pub fn watches(&self, name: &[u8]) -> bool {
        self.master_name.as_bytes() == name
    }

    pub fn master_name(&self) -> &str {
        &self.master_name
    }

    pub fn myid(&self) -> &str {
        &self.myid
    }

    /// Reads each node's role and offset again, skipping a node that runs a script.
    pub fn observe(&mut self) {
        for node in &mut self.nodes {
            if let Some(engine) = lock_unless_busy(&node.engine, &node.scripts) {
                node.follows = engine.followed_primary_port().map(|p| p as u16);
                node.offset = engine.repl_offset();
            }
        }
    }

    /// The primary's address: `get-master-addr-by-name`'s reply.
    pub fn primary_addr(&self) -> Frame {
        Frame::Array(vec![
            bulk(self.host.clone()),
            bulk(self.nodes[self.primary].port.to_string()),
        ])
    }

    /// The fields of `SENTINEL master`, in a real sentinel's order.
    pub fn master_fields(&self, now: i64) -> Frame {
        let primary = &self.nodes[self.primary];
        let mut fields = vec![
            field("name", self.master_name.clone()),
            field("ip", self.host.clone()),
            field("port", primary.port.to_string()),
            field("runid", primary.run_id.clone()),
            field("flags", "master"),
        ];
        fields.extend(self.link_fields(now));
        fields.extend([
            field("role-reported", "master"),
            field(
                "role-reported-time",
                (now - self.role_since).max(0).to_string(),
            ),
            field("config-epoch", self.config_epoch.to_string()),
            field("num-slaves", (self.nodes.len() - 1).to_string()),
            field("num-other-sentinels", "0"),
            field("quorum", "1"),
            field("failover-timeout", FAILOVER_TIMEOUT_MS.to_string()),
            field("parallel-syncs", PARALLEL_SYNCS.to_string()),
        ]);
        Frame::Map(fields)
    }

    /// One map per replica: `SENTINEL replicas`' reply, in port order.
    pub fn replica_fields(&self, now: i64) -> Frame {
        let primary_port = self.nodes[self.primary].port;
        let replicas = self
            .nodes
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != self.primary);
        let maps = replicas.map(|(_, node)| {
            let linked = node.follows == Some(primary_port);
            let mut fields = vec![
                field("name", format!("{}:{}", self.host, node.port)),
                field("ip", self.host.clone()),
                field("port", node.port.to_string()),
                field("runid", node.run_id.clone()),
                field("flags", "slave"),
            ];
            fields.extend(self.link_fields(now));
            fields.extend([
                field(
                    "role-reported",
                    if node.follows.is_some() {
                        "slave"
                    } else {
                        "master"
                    },
                ),
                field(
                    "role-reported-time",
                    (now - self.role_since).max(0).to_string(),
                ),
                field("master-link-down-time", "0"),
                field("master-link-status", if linked { "ok" } else { "err" }),
                field("master-host", self.host.clone()),
                field(
                    "master-port",
                    node.follows.unwrap_or(primary_port).to_string(),
                ),
                field("slave-priority", "100"),
                field("slave-repl-offset", node.offset.to_string()),
                field("replica-announced", "1"),
            ]);
            Frame::Map(fields)
        });
        Frame::Array(maps.collect())
    }

    /// The link fields every instance's entry has, from `link-pending-commands` to
    /// `info-refresh`: the times of a sentinel that pings each second and reads `INFO` each ten.
    fn link_fields(&self, now: i64) -> [(Frame, Frame); 7] {
        let up = (now - self.started_at).max(0);
        let since_ping = (up % PING_PERIOD_MS).to_string();
        [
            field("link-pending-commands", "0"),
            field("link-refcount", "1"),
            field("last-ping-sent", "0"),
            field("last-ok-ping-reply", since_ping.clone()),
            field("last-ping-reply", since_ping),
            field("down-after-milliseconds", DOWN_AFTER_MS.to_string()),
            field("info-refresh", (up % INFO_PERIOD_MS).to_string()),
        ]
    }

    /// `INFO`'s `# Sentinel` section.
    pub fn info_section(&self) -> String {
        format!(
            "# Sentinel\r\nsentinel_masters:1\r\nsentinel_tilt:0\r\n\
             sentinel_tilt_since_seconds:-1\r\nsentinel_running_scripts:0\r\n\
             sentinel_scripts_queue_length:0\r\nsentinel_simulate_failure_flags:0\r\n\
             master0:name={},status=ok,address={}:{},slaves={},sentinels=1\r\n",
            self.master_name,
            self.host,
            self.nodes[self.primary].port,
            self.nodes.len() - 1,
        )
    }

    /// `SENTINEL failover`: promotes the replica with the most data applied, makes the others and
    /// the old primary follow it, and returns the events to publish (see the [module
    /// docs](self)).
    pub fn failover(&mut self, now: i64) -> Result<Vec<Event>, FailoverRefused> {
        let old = self.primary;
        // Every node is reconfigured: none may be running a script (the lock would wait for it).
        // One that starts one meanwhile is waited for, as an ordinary command is.
        if let Some(node) = self.nodes.iter().find(|n| n.scripts.running()) {
            return Err(FailoverRefused::Busy(node.port));
        }
        let links = lock(&self.nodes[old].engine).replica_links();
        // Redis's choice: the largest replication offset processed (all priorities are equal),
        // then the smallest run id.
        let mut best: Option<(usize, i64)> = None;
        for (i, node) in self.nodes.iter().enumerate() {
            if !links.iter().any(|&(port, _, _)| port == node.port) {
                continue;
            }
            let mut engine = lock(&node.engine);
            // What has arrived by now is applied first: a promotion keeps it.
            engine.catch_up();
            let offset = engine.repl_offset();
            let better = best.is_none_or(|(b, o)| {
                offset > o || (offset == o && node.run_id < self.nodes[b].run_id)
            });
            if better {
                best = Some((i, offset));
            }
        }
        let Some((new, _)) = best else {
            return Err(FailoverRefused::NoGoodReplica);
        };
        let (old_port, new_port) = (self.nodes[old].port, self.nodes[new].port);
        let (_, promoted_index, promoted_lag) = *links
            .iter()
            .find(|l| l.0 == new_port)
            .expect("the chosen replica is one of the links");
        lock(&self.nodes[new].engine).promote();
        self.config_epoch += 1;
        let name = self.master_name.clone();
        let host = self.host.clone();
        let master = |port: u16| format!("master {name} {host} {port}");
        let instance = |port: u16, primary: u16| {
            format!("slave {host}:{port} {host} {port} @ {name} {host} {primary}")
        };
        let event = |channel: &str, message: String| (channel.to_owned(), message);
        let mut events = vec![
            event("+new-epoch", self.config_epoch.to_string()),
            event("+try-failover", master(old_port)),
            event(
                "+vote-for-leader",
                format!("{} {}", self.myid, self.config_epoch),
            ),
            event("+elected-leader", master(old_port)),
            event("+failover-state-select-slave", master(old_port)),
            event("+selected-slave", instance(new_port, old_port)),
            event(
                "+failover-state-send-slaveof-noone",
                instance(new_port, old_port),
            ),
            event(
                "+failover-state-wait-promotion",
                instance(new_port, old_port),
            ),
            event("+promoted-slave", instance(new_port, old_port)),
            event("+failover-state-reconf-slaves", master(old_port)),
        ];
        // The other replicas first, then the old primary, each with a full sync from the new one.
        let mut followers: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| i != old && i != new)
            .collect();
        followers.push(old);
        for &i in &followers {
            let port = self.nodes[i].port;
            let (index, lag) = links
                .iter()
                .find(|l| l.0 == port)
                .map_or((promoted_index, promoted_lag), |&(_, index, lag)| {
                    (index, lag)
                });
            // One engine locked at a time: the new primary's snapshot, then the follower's sync.
            let sync = lock(&self.nodes[new].engine).sync_replica(index, lag, port);
            let mut engine = lock(&self.nodes[i].engine);
            engine.catch_up();
            engine.follow(sync);
            if i != old {
                for what in [
                    "+slave-reconf-sent",
                    "+slave-reconf-inprog",
                    "+slave-reconf-done",
                ] {
                    events.push(event(what, instance(port, old_port)));
                }
            }
        }
        self.primary = new;
        self.role_since = now;
        self.observe();
        events.push(event("+failover-end", master(old_port)));
        events.push(event(
            "+switch-master",
            format!("{name} {host} {old_port} {host} {new_port}"),
        ));
        for &i in &followers {
            events.push(event("+slave", instance(self.nodes[i].port, new_port)));
        }
        events.push(event("+convert-to-slave", instance(old_port, new_port)));
        Ok(events)
    }
}
