//! The cluster's TCP door (`fake-redis-server --cluster <shards> --replicas <n>`,
//! `ServerGroup::clustered`): every node on its own port, in `redis-cli --cluster create`'s
//! layout, announcing the ports it listens on. The `redis` crate's cluster client and
//! `redis-cli -c` set and get keys on every shard and follow a slot's migration, and
//! `CLUSTER SLOTS` has the shape of a real Redis 7.0 cluster's (the one `scripts/test` starts;
//! read only: nothing here writes to it). Every group here is started by its test, on free ports.

use fake_redis::server::{ClockChoice, Door, RunningGroup, ServerConfig, ServerGroup};
use fake_redis::{Fault, ReplicaLag, ServerNode, key_slot};
use redis::AsyncCommands;

const SHARDS: u16 = 3;

/// Where `create_slot_ranges(3)` splits the slots: shard 0 up to 5460, shard 1 up to 10922.
fn shard_of_slot(slot: u16) -> u16 {
    match slot {
        0..=5460 => 0,
        5461..=10922 => 1,
        _ => 2,
    }
}

/// `per_shard` key names on each shard, under `prefix`.
fn keys_on_every_shard(prefix: &str, per_shard: usize) -> Vec<(u16, String)> {
    let mut found: Vec<(u16, String)> = Vec::new();
    for shard in 0..SHARDS {
        let names = (0..)
            .map(|i| format!("{prefix}:{i}"))
            .filter(|k| shard_of_slot(key_slot(k.as_bytes())) == shard)
            .take(per_shard);
        found.extend(names.map(|k| (shard, k)));
    }
    found
}

async fn start(clock: ClockChoice, replicas: u16) -> RunningGroup {
    let config = ServerConfig {
        port: 0,
        clock,
        ..ServerConfig::default()
    };
    ServerGroup::start_clustered(config, SHARDS, replicas, ReplicaLag::default())
        .await
        .unwrap()
}

fn urls(running: &RunningGroup) -> Vec<String> {
    (running.addrs().iter())
        .map(|a| format!("redis://{a}/"))
        .collect()
}

async fn node(running: &RunningGroup, i: usize) -> redis::aio::MultiplexedConnection {
    redis::Client::open(urls(running)[i].as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

#[test]
fn the_doors_are_primaries_first_then_each_shards_replicas() {
    let doors = ServerGroup::clustered_doors(3, 2);
    let expect = [
        ServerNode::shard_primary(0),
        ServerNode::shard_primary(1),
        ServerNode::shard_primary(2),
        ServerNode::shard_replica(0, 0),
        ServerNode::shard_replica(1, 0),
        ServerNode::shard_replica(2, 0),
        ServerNode::shard_replica(0, 1),
        ServerNode::shard_replica(1, 1),
        ServerNode::shard_replica(2, 1),
    ];
    assert_eq!(doors, expect.map(Door::Node));
}

/// Every node announces the ports the group listens on, in its layout, and the bind address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topology_replies_name_the_ports_it_listens_on() {
    let running = start(ClockChoice::System, 1).await;
    let ports: Vec<u16> = running.addrs().iter().map(|a| a.port()).collect();
    assert_eq!(ports.len(), 6);
    assert!(ports.windows(2).all(|w| w[1] == w[0] + 1), "{ports:?}");
    let mut conn = node(&running, 4).await;
    type Node = (String, u16, String, redis::Value);
    let slots: Vec<(u16, u16, Node, Node)> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(slots.len(), 3);
    for (shard, (first, last, primary, replica)) in slots.iter().enumerate() {
        assert_eq!(shard_of_slot(*first), shard as u16);
        assert_eq!(shard_of_slot(*last), shard as u16);
        assert_eq!((primary.0.as_str(), primary.1), ("127.0.0.1", ports[shard]));
        assert_eq!(
            (replica.0.as_str(), replica.1),
            ("127.0.0.1", ports[3 + shard])
        );
    }
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut conn)
        .await
        .unwrap();
    for (i, port) in ports.iter().enumerate() {
        let addr = format!("127.0.0.1:{port}@{}", u32::from(*port) + 10000);
        let line = text.lines().find(|l| l.contains(&addr)).unwrap();
        assert_eq!(line.contains("myself"), i == 4, "{line}");
        let flags = line
            .split(' ')
            .nth(2)
            .unwrap()
            .trim_start_matches("myself,");
        assert_eq!(flags, if i < 3 { "master" } else { "slave" }, "{line}");
    }
    let err = redis::cmd("SET")
        .arg("foo")
        .arg("bar")
        .query_async::<()>(&mut conn)
        .await
        .unwrap_err();
    let to = format!("127.0.0.1:{}", ports[2]);
    assert_eq!(err.redirect_node(), Some((to.as_str(), 12182)));
    running.stop().await;
}

/// The `redis` crate's cluster client sets and gets keys on every shard, each key landing on its
/// shard's primary, and follows the `MOVED` of a slot that migrated to another shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_redis_crate_cluster_client_spans_the_shards_and_follows_a_migration() {
    let running = start(
        ClockChoice::Virtual {
            epoch_ms: fake_redis::DEFAULT_EPOCH_MS,
        },
        1,
    )
    .await;
    let client = redis::cluster::ClusterClient::new(urls(&running)).unwrap();
    let mut cluster = client.get_async_connection().await.unwrap();
    let keys = keys_on_every_shard("door", 5);
    for (_, key) in &keys {
        let _: () = cluster.set(key, format!("v-{key}")).await.unwrap();
    }
    for (shard, key) in &keys {
        let got: String = cluster.get(key).await.unwrap();
        assert_eq!(got, format!("v-{key}"));
        // On its shard's primary, and nowhere else.
        let mut owner = node(&running, usize::from(*shard)).await;
        let here: Option<String> = owner.get(key).await.unwrap();
        assert_eq!(here.as_deref(), Some(got.as_str()));
    }
    for i in 0..3 {
        let size: i64 = redis::cmd("DBSIZE")
            .query_async(&mut node(&running, i).await)
            .await
            .unwrap();
        assert_eq!(size, 5, "shard {i}'s primary");
    }

    // Move the first key of shard 2 to shard 0, over 10 ms of the virtual clock.
    let (_, moved) = keys.iter().find(|(s, _)| *s == 2).unwrap().clone();
    let slot = key_slot(moved.as_bytes());
    let mut admin = node(&running, 0).await;
    let now: i64 = redis::cmd("FAKE.TIME")
        .query_async(&mut admin)
        .await
        .unwrap();
    let fault = Fault::SlotMigration {
        slot,
        to_shard: 0,
        from: now + 1,
        until: now + 10,
    };
    running.group().cluster().unwrap().add_fault(fault);
    let _: i64 = redis::cmd("FAKE.ADVANCE")
        .arg(20)
        .query_async(&mut admin)
        .await
        .unwrap();
    let err = redis::cmd("GET")
        .arg(&moved)
        .query_async::<Option<String>>(&mut node(&running, 2).await)
        .await
        .unwrap_err();
    let to = running.addrs()[0].to_string();
    assert_eq!(err.redirect_node(), Some((to.as_str(), slot)));
    // The client still maps the slot to shard 2: it follows the MOVED, and writes land on 0.
    let got: String = cluster.get(&moved).await.unwrap();
    assert_eq!(got, format!("v-{moved}"));
    let _: () = cluster.set(&moved, "after").await.unwrap();
    let on_target: Option<String> = admin.get(&moved).await.unwrap();
    assert_eq!(on_target.as_deref(), Some("after"));
    for (_, key) in keys.iter().filter(|(_, k)| *k != moved) {
        let got: String = cluster.get(key).await.unwrap();
        assert_eq!(got, format!("v-{key}"));
    }
    running.stop().await;
}

/// `FAKE.FAULT` arms the cluster's own faults on whichever node hears it, in the words a
/// fault prints as: a slot moves (its old owner answers `MOVED`), a shard's replica takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_fault_arms_a_migration_and_a_shard_failover_from_any_node() {
    let running = start(
        ClockChoice::Virtual {
            epoch_ms: fake_redis::DEFAULT_EPOCH_MS,
        },
        1,
    )
    .await;
    let (_, key) = keys_on_every_shard("armed", 1)
        .into_iter()
        .find(|(s, _)| *s == 2)
        .unwrap();
    let slot = key_slot(key.as_bytes());
    let mut owner = node(&running, 2).await;
    let _: () = owner.set(&key, "v").await.unwrap();
    let mut bystander = node(&running, 1).await;
    let now: i64 = redis::cmd("FAKE.TIME")
        .query_async(&mut bystander)
        .await
        .unwrap();
    let arm = |fault: Fault| {
        let mut cmd = redis::cmd("FAKE.FAULT");
        for word in fault.to_string().split(' ') {
            cmd.arg(word);
        }
        cmd
    };
    let migration = Fault::SlotMigration {
        slot,
        to_shard: 0,
        from: now + 1,
        until: now + 10,
    };
    let failover = Fault::ShardFailover {
        shard: 1,
        replica: 0,
        at: now + 5,
    };
    for fault in [migration, failover] {
        let _: () = arm(fault).query_async(&mut bystander).await.unwrap();
    }
    let _: i64 = redis::cmd("FAKE.ADVANCE")
        .arg(20)
        .query_async(&mut bystander)
        .await
        .unwrap();
    let err = redis::cmd("GET")
        .arg(&key)
        .query_async::<Option<String>>(&mut owner)
        .await
        .unwrap_err();
    let to = running.addrs()[0].to_string();
    assert_eq!(err.redirect_node(), Some((to.as_str(), slot)));
    let moved: Option<String> = node(&running, 0).await.get(&key).await.unwrap();
    assert_eq!(moved.as_deref(), Some("v"));
    // Shard 1's replica is the node after the three primaries and shard 0's replica.
    let role: redis::Value = redis::cmd("ROLE")
        .query_async(&mut node(&running, 4).await)
        .await
        .unwrap();
    let redis::Value::Array(role) = role else {
        panic!("ROLE answered {role:?}")
    };
    assert_eq!(role[0], redis::Value::BulkString(b"master".to_vec()));
    running.stop().await;
}

/// `redis-cli -c`, when it is installed (`scripts/test` installs it): sets and gets a key on
/// every shard through the first node, following each `MOVED`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_in_cluster_mode_sets_and_gets_on_every_shard() {
    let installed = tokio::process::Command::new("redis-cli")
        .arg("--version")
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("redis-cli is not installed: nothing to run it against the cluster door");
        return;
    }
    let running = start(ClockChoice::System, 1).await;
    let port = running.addrs()[0].port().to_string();
    let cli = |args: &[&str]| {
        let mut cmd = tokio::process::Command::new("redis-cli");
        cmd.args(["-c", "-h", "127.0.0.1", "-p", port.as_str()])
            .args(args);
        cmd
    };
    for (shard, key) in keys_on_every_shard("cli", 2) {
        let value = format!("on-{shard}");
        let set = cli(&["SET", &key, &value]).output().await.unwrap();
        let out = String::from_utf8_lossy(&set.stdout);
        assert_eq!(out.lines().last(), Some("OK"), "SET {key}: {out}");
        let get = cli(&["GET", &key]).output().await.unwrap();
        let out = String::from_utf8_lossy(&get.stdout);
        assert_eq!(out.lines().last(), Some(value.as_str()), "GET {key}: {out}");
        let mut owner = node(&running, usize::from(shard)).await;
        let here: Option<String> = owner.get(&key).await.unwrap();
        assert_eq!(here, Some(value));
    }
    running.stop().await;
}

/// A `CLUSTER SLOTS` reply with ids and ports blanked, ranges in slot order.
fn slots_shape(v: &redis::Value) -> String {
    use redis::Value;
    let Value::Array(ranges) = v else {
        return format!("not an array: {v:?}");
    };
    let mut ranges: Vec<String> = ranges
        .iter()
        .map(|r| {
            let Value::Array(items) = r else {
                return format!("not an array: {r:?}");
            };
            let parts: Vec<String> = items
                .iter()
                .map(|item| match item {
                    Value::Int(n) => format!("{n:05}"),
                    Value::Array(node) => {
                        let fields: Vec<String> = node
                            .iter()
                            .enumerate()
                            .map(|(i, f)| match (i, f) {
                                (0, Value::BulkString(ip)) => String::from_utf8_lossy(ip).into(),
                                (1, Value::Int(_)) => "port".into(),
                                (2, Value::BulkString(id)) => format!("id{}", id.len()),
                                (_, Value::Array(a)) if a.is_empty() => "[]".into(),
                                (_, Value::Map(m)) if m.is_empty() => "{}".into(),
                                (_, other) => format!("{other:?}"),
                            })
                            .collect();
                        format!("[{}]", fields.join(" "))
                    }
                    other => format!("{other:?}"),
                })
                .collect();
            parts.join(" ")
        })
        .collect();
    ranges.sort();
    ranges.join("\n")
}

/// The fake's `CLUSTER SLOTS` over TCP has the shape of a real Redis 7.0 cluster's of the same
/// layout (3 primaries with a replica each, as `scripts/test` starts one), in RESP2 and RESP3:
/// the same slot ranges, each with its primary then its replica as `[ip, port, id, {}]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_slots_has_the_shape_of_a_real_clusters() {
    let real_urls = crate::support::servers::cluster_urls().join(",");
    let running = start(ClockChoice::System, 1).await;
    let real_url = real_urls.split(',').next().unwrap().to_owned();
    let fake_url = urls(&running)[0].clone();
    for resp3 in [false, true] {
        let mut replies = Vec::new();
        for url in [&real_url, &fake_url] {
            let url = if resp3 {
                format!("{url}?protocol=resp3")
            } else {
                url.clone()
            };
            let mut conn = redis::Client::open(url)
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap();
            // A cluster just created lists a replica once gossip has told its nodes of it (a
            // few seconds): wait for every range to have one.
            let mut shape = String::new();
            for _ in 0..150 {
                let reply: redis::Value = redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                shape = slots_shape(&reply);
                if shape
                    .lines()
                    .all(|range| range.matches(" port ").count() >= 2)
                {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            replies.push(shape);
        }
        assert_eq!(replies[1], replies[0], "RESP3: {resp3}");
    }
    running.stop().await;
}

/// A cluster bound to another address than 127.0.0.1 (the loopback alias 127.0.0.2) names it
/// in its topology replies, its redirections, and each shard's `ROLE` and `INFO replication`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_bound_to_an_address_announces_it_in_every_reply() {
    let config = ServerConfig {
        port: 0,
        bind: std::net::Ipv4Addr::new(127, 0, 0, 2).into(),
        ..ServerConfig::default()
    };
    let running = ServerGroup::start_clustered(config, SHARDS, 1, ReplicaLag::default())
        .await
        .unwrap();
    let ports: Vec<u16> = running.addrs().iter().map(|a| a.port()).collect();
    let mut replica = node(&running, 3).await;
    let role: (String, String, u16, String, i64) =
        redis::cmd("ROLE").query_async(&mut replica).await.unwrap();
    assert_eq!(
        (role.0.as_str(), role.1.as_str(), role.2),
        ("slave", "127.0.0.2", ports[0])
    );
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut replica)
        .await
        .unwrap();
    assert!(info.contains("\r\nmaster_host:127.0.0.2\r\n"), "{info}");
    let mut primary = node(&running, 0).await;
    let (_, _, replicas): (String, i64, Vec<(String, String, String)>) =
        redis::cmd("ROLE").query_async(&mut primary).await.unwrap();
    assert_eq!(replicas[0].0, "127.0.0.2");
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut primary)
        .await
        .unwrap();
    assert!(text.lines().all(|l| l.contains(" 127.0.0.2:")), "{text}");
    let err = redis::cmd("GET")
        .arg("foo")
        .query_async::<Option<String>>(&mut primary)
        .await
        .unwrap_err();
    let to = format!("127.0.0.2:{}", ports[2]);
    assert_eq!(err.redirect_node(), Some((to.as_str(), 12182)));
    running.stop().await;
}
