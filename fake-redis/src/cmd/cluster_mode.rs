//! `CLUSTER` on a cluster node: what a cluster client reads to learn the topology (`SLOTS`,
//! `SHARDS`, `NODES`, `INFO`, `MYID`, `REPLICAS`) and the slot helpers (`KEYSLOT`,
//! `COUNTKEYSINSLOT`, `GETKEYSINSLOT`), with Redis 7.0.15's reply shapes and error texts, read
//! off the cluster's map (`engine/cluster.rs`).
//!
//! The fake's topology changes through its faults (`Fault::SlotMigration`,
//! `Fault::ShardFailover`), not through the commands an operator or `redis-cli --cluster` sends
//! (`ADDSLOTS`, `SETSLOT`, `FAILOVER`, `MEET`, ...): those answer an error that says so. Where
//! Redis's order is a hash table's (`NODES`, `SHARDS`), the fake's is the nodes' port order.

use super::server::help_reply;
use super::{Args, CmdResult, Cx, int};
use crate::engine::cluster::{ClusterState, Role, SLOTS, key_slot};
use crate::resp::Frame;
use bytes::Bytes;
use std::fmt::Write as _;

const CLUSTER_HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];

/// `CLUSTER <sub>` on a cluster node (dispatch has checked the subcommand and its arity).
pub(super) fn cluster_command(cx: &mut Cx<'_>, sub: &str, args: &mut Args<'_>) -> CmdResult {
    match sub {
        "help" => Ok(help_reply(CLUSTER_HELP)),
        "keyslot" => Ok(Frame::Integer(i64::from(key_slot(args.next_bytes()?)))),
        "countkeysinslot" => {
            let slot = int(args.next_bytes()?)?;
            if !(0..i64::from(SLOTS)).contains(&slot) {
                return Err(Frame::error("ERR Invalid slot"));
            }
            let now = cx.now;
            let count = (cx.keyspace().live_iter(now))
                .filter(|(k, _)| i64::from(key_slot(k)) == slot)
                .count();
            Ok(Frame::Integer(count as i64))
        }
        "getkeysinslot" => {
            let slot = int(args.next_bytes()?)?;
            let max = int(args.next_bytes()?)?;
            if !(0..i64::from(SLOTS)).contains(&slot) || max < 0 {
                return Err(Frame::error("ERR Invalid slot or number of keys"));
            }
            let now = cx.now;
            let db = cx.keyspace();
            let mut keys: Vec<Bytes> = (db.live_iter(now))
                .filter(|(k, _)| i64::from(key_slot(k)) == slot)
                .map(|(k, _)| Bytes::copy_from_slice(k))
                .collect();
            // Newest first, as Redis's slot-to-keys list (`engine/notify.rs`, `Births`).
            let births = db.watches.key_events.as_ref().and_then(|e| e.births());
            keys.sort_by(|a, b| {
                let born = |k: &[u8]| births.and_then(|b| b.of(k));
                born(b).cmp(&born(a)).then_with(|| a.cmp(b))
            });
            keys.truncate(usize::try_from(max).unwrap_or(usize::MAX));
            Ok(Frame::Array(keys.into_iter().map(Frame::Bulk).collect()))
        }
        "myid" | "info" | "slots" | "shards" | "nodes" | "replicas" | "slaves" => {
            let view = View::of(cx);
            let state = &view.state;
            match sub {
                "myid" => Ok(Frame::Bulk(Bytes::from(state.nodes[view.me].id.clone()))),
                "info" => Ok(Frame::text(info(&view))),
                "slots" => Ok(slots(&view)),
                "shards" => Ok(shards(&view)),
                "nodes" => Ok(Frame::Bulk(Bytes::from(nodes(&view, |_| true)))),
                _ => {
                    let id = args.next_bytes()?;
                    let Some(n) =
                        (0..state.nodes.len()).find(|&i| state.nodes[i].id.as_bytes() == id)
                    else {
                        return Err(super::error_echoing(&[b"ERR Unknown node ", id]));
                    };
                    if state.nodes[n].role != Role::Primary {
                        return Err(Frame::error("ERR The specified node is not a master"));
                    }
                    let shard = state.nodes[n].shard;
                    let text = nodes(&view, |i| {
                        state.nodes[i].shard == shard && state.nodes[i].role == Role::Replica
                    });
                    Ok(Frame::Array(
                        text.lines()
                            .map(|l| Frame::Bulk(Bytes::from(l.to_owned())))
                            .collect(),
                    ))
                }
            }
        }
        other => Err(Frame::error_owned(format!(
            "ERR CLUSTER {} is not supported by the fake: its topology changes through faults \
             (SlotMigration, ShardFailover)",
            other.to_ascii_uppercase()
        ))),
    }
}

/// The map as one node sees it at its command's time.
struct View {
    state: ClusterState,
    me: usize,
    now: i64,
    /// Each node's replication offset: this node's own, the others' as they last published it.
    offsets: Vec<i64>,
}

impl View {
    fn of(cx: &mut Cx<'_>) -> View {
        let now = cx.now;
        let engine = cx.engine();
        let member = engine.cluster_member().expect("a cluster node");
        let me = member.me;
        let state = member.shared.state(now).clone();
        let offsets = (0..state.nodes.len())
            .map(|i| match i == me {
                true => engine.repl_offset(),
                false => engine.cluster_offset_of(i),
            })
            .collect();
        View {
            state,
            me,
            now,
            offsets,
        }
    }

    /// The node a replica follows: its shard's primary.
    fn primary_of(&self, node: usize) -> Option<usize> {
        self.state.primary_of(self.state.nodes[node].shard)
    }

    /// `[ip, port, id, {}]`, a node in `CLUSTER SLOTS`.
    fn slots_node(&self, node: usize) -> Frame {
        let n = &self.state.nodes[node];
        Frame::Array(vec![
            Frame::Bulk(Bytes::copy_from_slice(self.state.ip.as_bytes())),
            Frame::Integer(i64::from(n.port)),
            Frame::Bulk(Bytes::from(n.id.clone())),
            Frame::Map(Vec::new()),
        ])
    }
}

/// `CLUSTER INFO`, as Redis 7.0 prints it (the fake has no cluster bus, so no message counts).
fn info(view: &View) -> String {
    let state = &view.state;
    let ranges = state.ranges();
    let mut failed_slots = 0;
    let mut size = std::collections::BTreeSet::new();
    for &(first, last, shard) in &ranges {
        let count = usize::from(last - first) + 1;
        match state.primary_of(shard) {
            Some(p) => {
                size.insert(p);
            }
            None => failed_slots += count,
        }
    }
    let assigned: usize = ranges.iter().map(|&(f, l, _)| usize::from(l - f) + 1).sum();
    let mut s = String::new();
    let _ = write!(
        s,
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{}\r\n\
         cluster_slots_pfail:0\r\ncluster_slots_fail:{failed_slots}\r\n\
         cluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\n\
         cluster_my_epoch:{}\r\ncluster_stats_messages_sent:0\r\n\
         cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
        if state.is_ok() { "ok" } else { "fail" },
        assigned - failed_slots,
        state.nodes.len(),
        size.len(),
        state.current_epoch,
        state.nodes[view.me].epoch,
    );
    s
}

/// `CLUSTER SLOTS`: each range of slots one shard owns, in slot order, with its primary and
/// its replicas.
fn slots(view: &View) -> Frame {
    let state = &view.state;
    let mut out = Vec::new();
    for (first, last, shard) in state.ranges() {
        let Some(owner) = state.primary_of(shard).or_else(|| {
            (0..state.nodes.len())
                .rev()
                .find(|&i| state.nodes[i].shard == shard && state.nodes[i].role == Role::Failed)
        }) else {
            continue;
        };
        let mut entry = vec![
            Frame::Integer(i64::from(first)),
            Frame::Integer(i64::from(last)),
            view.slots_node(owner),
        ];
        if state.nodes[owner].role == Role::Primary {
            entry.extend(state.replicas_of(shard).map(|r| view.slots_node(r)));
        }
        out.push(Frame::Array(entry));
    }
    Frame::Array(out)
}

/// `CLUSTER SHARDS`: each shard with its slot ranges and nodes; a failed primary that serves
/// nothing more is a shard of its own, as Redis lists every master.
fn shards(view: &View) -> Frame {
    let state = &view.state;
    let ranges = state.ranges();
    let masters = (0..state.nodes.len()).filter(|&i| state.nodes[i].role != Role::Replica);
    let mut out = Vec::new();
    for master in masters {
        let shard = state.nodes[master].shard;
        let owns = state.primary_of(shard) == Some(master)
            || (state.primary_of(shard).is_none()
                && state.owner_node(first_slot_of(&ranges, shard)) == Some(master));
        let mut slots = Vec::new();
        if owns {
            for &(first, last, s) in &ranges {
                if s == shard {
                    slots.push(Frame::Integer(i64::from(first)));
                    slots.push(Frame::Integer(i64::from(last)));
                }
            }
        }
        let mut nodes = vec![shard_node(view, master)];
        if state.nodes[master].role == Role::Primary {
            nodes.extend(state.replicas_of(shard).map(|r| shard_node(view, r)));
        }
        out.push(Frame::Map(vec![
            (
                Frame::Bulk(Bytes::from_static(b"slots")),
                Frame::Array(slots),
            ),
            (
                Frame::Bulk(Bytes::from_static(b"nodes")),
                Frame::Array(nodes),
            ),
        ]));
    }
    Frame::Array(out)
}

fn first_slot_of(ranges: &[(u16, u16, u16)], shard: u16) -> u16 {
    ranges
        .iter()
        .find(|r| r.2 == shard)
        .map_or(u16::MAX, |r| r.0)
}

/// A node of `CLUSTER SHARDS`.
fn shard_node(view: &View, node: usize) -> Frame {
    let n = &view.state.nodes[node];
    let bulk = |s: &'static str| Frame::Bulk(Bytes::from_static(s.as_bytes()));
    let ip = Frame::Bulk(Bytes::copy_from_slice(view.state.ip.as_bytes()));
    let (role, health) = match n.role {
        Role::Primary => ("master", "online"),
        Role::Replica => ("replica", "online"),
        Role::Failed => ("master", "failed"),
    };
    Frame::Map(vec![
        (bulk("id"), Frame::Bulk(Bytes::from(n.id.clone()))),
        (bulk("port"), Frame::Integer(i64::from(n.port))),
        (bulk("ip"), ip.clone()),
        (bulk("endpoint"), ip),
        (bulk("role"), bulk(role)),
        (
            bulk("replication-offset"),
            Frame::Integer(view.offsets[node]),
        ),
        (bulk("health"), bulk(health)),
    ])
}

/// `CLUSTER NODES`' lines of the nodes `which` picks, in port order.
fn nodes(view: &View, which: impl Fn(usize) -> bool) -> String {
    let state = &view.state;
    let ranges = state.ranges();
    let mut s = String::new();
    for i in (0..state.nodes.len()).filter(|&i| which(i)) {
        let n = &state.nodes[i];
        let myself = if i == view.me { "myself," } else { "" };
        let (flags, link) = match n.role {
            Role::Primary => ("master", "connected"),
            Role::Replica => ("slave", "connected"),
            Role::Failed => ("master,fail", "disconnected"),
        };
        let master = match n.role {
            Role::Replica => view
                .primary_of(i)
                .map_or("-".to_owned(), |p| state.nodes[p].id.clone()),
            _ => "-".to_owned(),
        };
        // Redis prints its own pong time to the second.
        let pong = if i == view.me {
            view.now - view.now.rem_euclid(1000)
        } else {
            view.now
        };
        let _ = write!(
            s,
            "{} {}:{}@{} {myself}{flags} {master} 0 {pong} {} {link}",
            n.id,
            state.ip,
            n.port,
            u32::from(n.port) + 10000,
            n.epoch,
        );
        let owns =
            n.role != Role::Replica && ranges.iter().any(|r| state.owner_node(r.0) == Some(i));
        if owns {
            for &(first, last, _) in ranges.iter().filter(|r| state.owner_node(r.0) == Some(i)) {
                if first == last {
                    let _ = write!(s, " {first}");
                } else {
                    let _ = write!(s, " {first}-{last}");
                }
            }
        }
        if i == view.me {
            for m in state.migrations.iter().filter(|m| m.open(view.now)) {
                if state.primary_of(m.from_shard) == Some(i)
                    && let Some(to) = state.primary_of(m.to_shard)
                {
                    let _ = write!(s, " [{}->-{}]", m.slot, state.nodes[to].id);
                } else if state.primary_of(m.to_shard) == Some(i)
                    && let Some(from) = state.primary_of(m.from_shard)
                {
                    let _ = write!(s, " [{}-<-{}]", m.slot, state.nodes[from].id);
                }
            }
        }
        s.push('\n');
    }
    s
}
