//! A Redis Cluster of engines (`engine/cluster.rs`): slots as Redis hashes them, the topology
//! commands' shapes, redirections, a slot's migration, a shard's failover with its replica's
//! lag, sharded pub/sub, and replay from a seed.

use bytes::Bytes;
use fake_redis::Clock;
use fake_redis::{
    ClientId, Cluster, Engine, EngineConfig, Fault, Frame, ManualClock, ReplicaLag, ServerNode,
    key_slot,
};
use std::sync::{Arc, Mutex};

const BASE: u16 = 7000;

fn argv(line: &str) -> Vec<Bytes> {
    line.split(' ')
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

/// A client of one node.
struct Conn {
    engine: Arc<Mutex<Engine>>,
    id: ClientId,
}

impl Conn {
    fn to(cluster: &Cluster, node: ServerNode) -> Conn {
        let engine = cluster.node(node).clone();
        let id = engine.lock().unwrap().connect();
        Conn { engine, id }
    }

    fn run(&self, line: &str) -> Frame {
        self.engine.lock().unwrap().execute(self.id, &argv(line))
    }

    /// `EVAL body numkeys keys… args…`, the body kept whole.
    fn eval(&self, body: &str, keys: &[&str], args: &[&str]) -> Frame {
        let mut argv = vec![
            Bytes::from_static(b"EVAL"),
            Bytes::copy_from_slice(body.as_bytes()),
            Bytes::from(keys.len().to_string()),
        ];
        argv.extend(
            keys.iter()
                .chain(args)
                .map(|w| Bytes::copy_from_slice(w.as_bytes())),
        );
        self.engine.lock().unwrap().execute(self.id, &argv)
    }

    fn pushes(&self) -> Vec<Frame> {
        self.engine.lock().unwrap().drain_outbox(self.id)
    }
}

fn cluster(seed: u64, replicas: u16, lag: ReplicaLag) -> (ManualClock, Cluster) {
    let clock = ManualClock::default();
    let config = EngineConfig {
        seed,
        ..EngineConfig::default()
    };
    let cluster = Cluster::new(clock.clone(), config, 3, replicas, lag, BASE);
    (clock, cluster)
}

fn error(text: &str) -> Frame {
    Frame::error_owned(text.to_owned())
}

fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

#[test]
fn slots_are_crc16_of_the_key_or_its_hash_tag() {
    // Each answered by Redis 7.0.15's CLUSTER KEYSLOT.
    assert_eq!(key_slot(b"foo"), 12182);
    assert_eq!(key_slot(b"b"), 3300);
    assert_eq!(key_slot(b"{user1000}.following"), 3443);
    assert_eq!(key_slot(b"{a}1"), 15495);
    assert_eq!(key_slot(b"{}a"), 10875);
    assert_eq!(key_slot(b"a{}"), 6082);
    assert_eq!(key_slot(b"{a"), 10276);
}

#[test]
fn slots_split_as_redis_cli_cluster_create_splits_them() {
    use fake_redis::engine::cluster::create_slot_ranges;
    assert_eq!(
        create_slot_ranges(3),
        [(0, 5460), (5461, 10922), (10923, 16383)]
    );
    assert_eq!(create_slot_ranges(1), [(0, 16383)]);
    let five = create_slot_ranges(5);
    assert_eq!(five.first().unwrap().0, 0);
    assert_eq!(five.last().unwrap().1, 16383);
}

#[test]
fn cluster_slots_lists_each_range_with_its_primary_then_replicas() {
    let (_clock, cluster) = cluster(1, 1, ReplicaLag::default());
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    let Frame::Array(ranges) = c.run("CLUSTER SLOTS") else {
        panic!("an array");
    };
    assert_eq!(ranges.len(), 3);
    let expected = [
        (0, 5460, 7000, 7003),
        (5461, 10922, 7001, 7004),
        (10923, 16383, 7002, 7005),
    ];
    for (range, (first, last, primary, replica)) in ranges.iter().zip(expected) {
        let Frame::Array(fields) = range else {
            panic!()
        };
        assert_eq!(fields[0], Frame::Integer(first));
        assert_eq!(fields[1], Frame::Integer(last));
        for (node, port) in fields[2..].iter().zip([primary, replica]) {
            let Frame::Array(node) = node else { panic!() };
            assert_eq!(node[0], bulk("127.0.0.1"));
            assert_eq!(node[1], Frame::Integer(port));
            assert!(matches!(&node[2], Frame::Bulk(id) if id.len() == 40));
            assert_eq!(node[3], Frame::Map(Vec::new()));
        }
        assert_eq!(fields.len(), 4);
    }
    let myid = c.run("CLUSTER MYID");
    let nodes = c.run("CLUSTER NODES");
    let Frame::Bulk(nodes) = nodes else { panic!() };
    let text = String::from_utf8(nodes.to_vec()).unwrap();
    assert_eq!(text.lines().count(), 6);
    let Frame::Bulk(id) = myid else { panic!() };
    let mine = text
        .lines()
        .find(|l| l.contains("myself"))
        .unwrap()
        .to_owned();
    assert!(mine.starts_with(std::str::from_utf8(&id).unwrap()));
    assert!(mine.contains(" 127.0.0.1:7000@17000 myself,master - 0 "));
    assert!(mine.ends_with(" 1 connected 0-5460"), "{mine}");
    let replica = text.lines().find(|l| l.contains(":7003@")).unwrap();
    assert!(replica.contains(" slave "), "{replica}");
    let info = c.run("CLUSTER INFO");
    let Frame::Verbatim { text, .. } = info else {
        panic!()
    };
    let text = String::from_utf8(text.to_vec()).unwrap();
    assert!(text.starts_with("cluster_state:ok\r\ncluster_slots_assigned:16384\r\n"));
    assert!(text.contains("cluster_known_nodes:6\r\ncluster_size:3\r\n"));
}

#[test]
fn node_ids_come_from_the_seed() {
    let ids = |seed| {
        let (_clock, cluster) = cluster(seed, 1, ReplicaLag::default());
        cluster
            .nodes()
            .into_iter()
            .map(|(node, _)| Conn::to(&cluster, node).run("CLUSTER MYID"))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(7), ids(7));
    assert_ne!(ids(7), ids(8));
    let mut distinct = ids(7);
    distinct.dedup();
    assert_eq!(distinct.len(), 6);
}

#[test]
fn a_key_served_elsewhere_is_moved_and_keys_of_two_slots_are_crossslot() {
    let (_clock, cluster) = cluster(1, 1, ReplicaLag::default());
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    assert_eq!(c.run("GET foo"), error("MOVED 12182 127.0.0.1:7002"));
    assert_eq!(c.run("SET foo 1"), error("MOVED 12182 127.0.0.1:7002"));
    assert_eq!(
        c.run("MGET a b"),
        error("CROSSSLOT Keys in request don't hash to the same slot")
    );
    assert_eq!(c.run("MGET {a}1 {a}2"), error("MOVED 15495 127.0.0.1:7002"));
    assert_eq!(c.run("SET b 1"), Frame::OK);
    assert_eq!(
        c.run("MGET b {b}x"),
        Frame::Array(vec![bulk("1"), Frame::Null])
    );
    // A script's declared keys route as a command's.
    assert_eq!(
        c.run("EVAL return 2 a b"),
        error("CROSSSLOT Keys in request don't hash to the same slot")
    );
    assert_eq!(
        c.run("EVAL return 1 foo"),
        error("MOVED 12182 127.0.0.1:7002")
    );
    assert_eq!(c.run("EVAL return 0"), Frame::Null);
    // Keyless commands run anywhere.
    assert_eq!(c.run("PING"), Frame::simple("PONG"));
    assert_eq!(
        c.run("SELECT 1"),
        error("ERR SELECT is not allowed in cluster mode")
    );
    assert_eq!(c.run("SELECT 0"), Frame::OK);
    assert_eq!(c.run("CLUSTER KEYSLOT foo"), Frame::Integer(12182));
    assert_eq!(c.run("CLUSTER COUNTKEYSINSLOT 3300"), Frame::Integer(1));
    assert_eq!(
        c.run("CLUSTER COUNTKEYSINSLOT 16384"),
        error("ERR Invalid slot")
    );
    assert_eq!(
        c.run("CLUSTER GETKEYSINSLOT 3300 10"),
        Frame::Array(vec![bulk("b")])
    );
    assert_eq!(
        c.run("CLUSTER GETKEYSINSLOT 1 -1"),
        error("ERR Invalid slot or number of keys")
    );
}

#[test]
fn a_transaction_with_a_moved_key_is_aborted_and_exec_checks_its_queue_together() {
    let (_clock, cluster) = cluster(1, 0, ReplicaLag::default());
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    assert_eq!(c.run("MULTI"), Frame::OK);
    assert_eq!(c.run("SET foo 1"), error("MOVED 12182 127.0.0.1:7002"));
    assert_eq!(
        c.run("EXEC"),
        error("EXECABORT Transaction discarded because of previous errors.")
    );
    // Two slots each served here, queued one by one: EXEC finds them apart, and answers
    // the error itself, its transaction discarded.
    let other = (0..100)
        .map(|i| format!("k{i}"))
        .find(|k| key_slot(k.as_bytes()) < 5461 && key_slot(k.as_bytes()) != 3300)
        .unwrap();
    assert_eq!(c.run("MULTI"), Frame::OK);
    assert_eq!(c.run("SET b 1"), Frame::simple("QUEUED"));
    assert_eq!(c.run(&format!("SET {other} 1")), Frame::simple("QUEUED"));
    assert_eq!(
        c.run("EXEC"),
        error("CROSSSLOT Keys in request don't hash to the same slot")
    );
    assert_eq!(c.run("EXEC"), error("ERR EXEC without MULTI"));
    assert_eq!(c.run("MULTI"), Frame::OK);
    assert_eq!(c.run("SET b 1"), Frame::simple("QUEUED"));
    assert_eq!(c.run("SET {b}2 1"), Frame::simple("QUEUED"));
    assert_eq!(c.run("EXEC"), Frame::Array(vec![Frame::OK, Frame::OK]));
}

#[test]
fn a_replica_redirects_to_its_primary_unless_readonly_and_reads_what_has_reached_it() {
    let (clock, cluster) = cluster(1, 1, ReplicaLag::fixed(100));
    let primary = Conn::to(&cluster, ServerNode::shard_primary(0));
    let replica = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    assert_eq!(primary.run("SET b 1"), Frame::OK);
    assert_eq!(replica.run("GET b"), error("MOVED 3300 127.0.0.1:7000"));
    assert_eq!(replica.run("READONLY"), Frame::OK);
    assert_eq!(replica.run("GET b"), Frame::Null);
    clock.advance(100);
    assert_eq!(replica.run("GET b"), bulk("1"));
    // Writes and other shards' keys still go to their primary.
    assert_eq!(replica.run("SET b 2"), error("MOVED 3300 127.0.0.1:7000"));
    assert_eq!(replica.run("GET foo"), error("MOVED 12182 127.0.0.1:7002"));
    assert_eq!(replica.run("READWRITE"), Frame::OK);
    assert_eq!(replica.run("GET b"), error("MOVED 3300 127.0.0.1:7000"));
}

/// Replies of a migration of slot 3300 (`b`'s) from shard 0 to shard 1 over [1000, 2000).
fn migration_trace(seed: u64) -> Vec<Frame> {
    let (clock, cluster) = cluster(seed, 1, ReplicaLag::fixed(5));
    let source = Conn::to(&cluster, ServerNode::shard_primary(0));
    let target = Conn::to(&cluster, ServerNode::shard_primary(1));
    let mut trace = vec![];
    for key in ["b", "{b}1", "{b}2", "{b}3"] {
        trace.push(source.run(&format!("SET {key} v{key}")));
    }
    cluster.add_fault(Fault::SlotMigration {
        slot: 3300,
        to_shard: 1,
        from: clock.now_ms() + 1000,
        until: clock.now_ms() + 2000,
    });
    trace.push(target.run("GET b"));
    clock.advance(1000);
    // Open: keys not moved yet are served, a missing key is asked for at the target.
    trace.push(source.run("GET {b}3"));
    trace.push(source.run("GET {b}new"));
    trace.push(target.run("GET {b}new"));
    trace.push(target.run("ASKING"));
    trace.push(target.run("SET {b}new fresh"));
    trace.push(source.run("CLUSTER NODES"));
    clock.advance(450);
    // Two of four keys have moved: a call about one moved and one not must try again.
    trace.push(source.run("MGET b {b}3"));
    trace.push(source.run("GET b"));
    trace.push(target.run("ASKING"));
    trace.push(target.run("GET b"));
    clock.advance(550);
    // Done: the target owns the slot.
    trace.push(source.run("GET {b}3"));
    trace.push(target.run("GET {b}3"));
    trace.push(target.run("GET {b}new"));
    trace.push(source.run("CLUSTER SLOTS"));
    trace
}

#[test]
fn a_migrating_slot_answers_ask_then_moved_once_done() {
    let trace = migration_trace(3);
    let ask = error("ASK 3300 127.0.0.1:7001");
    assert_eq!(trace[4], error("MOVED 3300 127.0.0.1:7000"));
    assert_eq!(trace[5], bulk("v{b}3"));
    assert_eq!(trace[6], ask);
    assert_eq!(trace[7], error("MOVED 3300 127.0.0.1:7000"));
    assert_eq!(trace[8], Frame::OK);
    assert_eq!(trace[9], Frame::OK);
    let Frame::Bulk(nodes) = &trace[10] else {
        panic!()
    };
    let nodes = String::from_utf8(nodes.to_vec()).unwrap();
    let mine = nodes.lines().find(|l| l.contains("myself")).unwrap();
    assert!(mine.contains(" 0-5460 [3300->-"), "{mine}");
    assert_eq!(
        trace[11],
        error("TRYAGAIN Multiple keys request during rehashing of slot")
    );
    assert_eq!(trace[12], ask);
    assert_eq!(trace[13], Frame::OK);
    assert_eq!(trace[14], bulk("vb"));
    assert_eq!(trace[15], error("MOVED 3300 127.0.0.1:7001"));
    assert_eq!(trace[16], bulk("v{b}3"));
    assert_eq!(trace[17], bulk("fresh"));
    let Frame::Array(ranges) = &trace[18] else {
        panic!()
    };
    // 0-3299 and 3301-5460 stay shard 0's; 3300 joins shard 1's as a range of its own.
    assert_eq!(ranges.len(), 5);
}

#[test]
fn a_migration_replays_exactly_from_its_seed() {
    assert_eq!(migration_trace(11), migration_trace(11));
}

#[test]
fn a_failover_promotes_the_replica_with_what_reached_it_and_the_old_primary_moves_clients() {
    let (clock, cluster) = cluster(1, 1, ReplicaLag::fixed(100));
    let primary = Conn::to(&cluster, ServerNode::shard_primary(0));
    assert_eq!(primary.run("SET b early"), Frame::OK);
    clock.advance(150);
    assert_eq!(primary.run("SET {b}late acquired"), Frame::OK);
    cluster.add_fault(Fault::ShardFailover {
        shard: 0,
        replica: 0,
        at: clock.now_ms() + 50,
    });
    clock.advance(50);
    // The batch of the late write would arrive at +100: the promoted replica never had it.
    let promoted = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    assert_eq!(promoted.run("GET b"), bulk("early"));
    assert_eq!(promoted.run("GET {b}late"), Frame::Null);
    assert_eq!(primary.run("GET b"), error("MOVED 3300 127.0.0.1:7003"));
    clock.advance(100);
    assert_eq!(promoted.run("GET {b}late"), Frame::Null);
    assert_eq!(cluster.serving(3300), Some(ServerNode::shard_replica(0, 0)));
    let Frame::Bulk(nodes) = promoted.run("CLUSTER NODES") else {
        panic!()
    };
    let nodes = String::from_utf8(nodes.to_vec()).unwrap();
    let old = nodes.lines().find(|l| l.contains(":7000@")).unwrap();
    assert!(old.contains(" master,fail - "), "{old}");
    let new = nodes.lines().find(|l| l.contains(":7003@")).unwrap();
    assert!(
        new.contains(" myself,master - ") && new.ends_with(" 0-5460"),
        "{new}"
    );
}

/// A cluster without replicas whose shard 1 failed over with no replica to promote, and a client
/// of shard 0's primary; the cluster is returned to be kept while the client is used.
fn down_cluster() -> (Cluster, Conn) {
    let (clock, cluster) = cluster(1, 0, ReplicaLag::default());
    cluster.add_fault(Fault::ShardFailover {
        shard: 1,
        replica: 0,
        at: clock.now_ms(),
    });
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    (cluster, c)
}

#[test]
fn a_shard_without_a_replica_to_promote_takes_the_cluster_down() {
    let (_cluster, c) = down_cluster();
    assert_eq!(c.run("GET b"), error("CLUSTERDOWN The cluster is down"));
    let Frame::Verbatim { text, .. } = c.run("CLUSTER INFO") else {
        panic!()
    };
    assert!(text.starts_with(b"cluster_state:fail\r\n"));
}

#[test]
fn shard_messages_reach_the_shard_and_publish_reaches_every_node() {
    let (_clock, cluster) = cluster(1, 1, ReplicaLag::fixed(100));
    let primary = Conn::to(&cluster, ServerNode::shard_primary(0));
    let replica = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    let elsewhere = Conn::to(&cluster, ServerNode::shard_replica(2, 0));
    // A replica serves its primary's shard channels without READONLY.
    assert!(matches!(replica.run("SSUBSCRIBE b"), Frame::Push(_)));
    assert_eq!(
        primary.run("SSUBSCRIBE foo"),
        error("MOVED 12182 127.0.0.1:7002")
    );
    assert!(matches!(elsewhere.run("SUBSCRIBE news"), Frame::Push(_)));
    assert_eq!(primary.run("SPUBLISH b hello"), Frame::Integer(0));
    assert_eq!(primary.run("PUBLISH news hi"), Frame::Integer(0));
    let smessage = Frame::Push(vec![bulk("smessage"), bulk("b"), bulk("hello")]);
    assert_eq!(replica.pushes(), [smessage]);
    let message = Frame::Push(vec![bulk("message"), bulk("news"), bulk("hi")]);
    assert_eq!(elsewhere.pushes(), [message]);
}

/// The skeleton of a reply: its types and the field names of its maps, without the values
/// (ids, ports, offsets) that differ between two clusters.
fn shape(v: &redis::Value) -> String {
    use redis::Value;
    const NAMES: &[&str] = &[
        "slots",
        "nodes",
        "id",
        "port",
        "ip",
        "endpoint",
        "role",
        "replication-offset",
        "health",
    ];
    match v {
        Value::Int(_) => "int".into(),
        Value::BulkString(b) => match NAMES.iter().find(|n| n.as_bytes() == &b[..]) {
            Some(name) => (*name).into(),
            None => "bulk".into(),
        },
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(shape).collect();
            format!("[{}]", inner.join(","))
        }
        other => format!("{other:?}"),
    }
}

/// The distinct skeletons of a reply's elements at `depth` (1: each range or shard; 2: each of
/// their fields).
fn shapes_at(v: &redis::Value, depth: usize) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    match v {
        redis::Value::Array(items) if depth > 0 => {
            for i in items {
                out.extend(shapes_at(i, depth - 1));
            }
        }
        other => {
            out.insert(shape(other));
        }
    }
    out
}

/// The shape of a `CLUSTER NODES` line: its field count up to the link state, and its flags
/// without `myself`.
fn node_line_shapes(v: &redis::Value) -> std::collections::BTreeSet<String> {
    let redis::Value::BulkString(text) = v else {
        return Default::default();
    };
    String::from_utf8_lossy(text)
        .lines()
        .map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            let address = fields[1].contains(":") && fields[1].contains("@");
            let flags = fields[2].trim_start_matches("myself,");
            let master = fields[3] == "-" || fields[3].len() == 40;
            format!(
                "{} {address} {flags} {master} {}",
                fields.len().min(8),
                fields[7]
            )
        })
        .collect()
}

/// What `scripts/test` starts (`scripts/topology.sh`): a real Redis 7.0 cluster of 3 primaries
/// with a replica each. Read only: nothing here writes to it.
#[tokio::test]
async fn topology_replies_have_the_shapes_of_a_real_cluster() {
    let urls = crate::support::servers::cluster_urls();
    let url = urls[0].as_str();
    let client = redis::Client::open(url).unwrap();
    let mut real = client.get_multiplexed_async_connection().await.unwrap();
    let (_clock, cluster) = cluster(1, 1, ReplicaLag::default());
    let fake = Conn::to(&cluster, ServerNode::shard_primary(0));
    for sub in ["SLOTS", "SHARDS", "NODES"] {
        let theirs: redis::Value = redis::cmd("CLUSTER")
            .arg(sub)
            .query_async(&mut real)
            .await
            .unwrap();
        let ours = fake.run(&format!("CLUSTER {sub}")).to_redis_value(2);
        match sub {
            // Each range: its first and last slot, then nodes of one shape.
            "SLOTS" => {
                assert_eq!(shapes_at(&ours, 2), shapes_at(&theirs, 2), "{sub}");
            }
            // Each shard's fields, and each node's fields (a replica still syncing says
            // `loading` where ours say `online`: the same type).
            "SHARDS" => {
                assert_eq!(shapes_at(&ours, 1).len(), 1);
                for depth in [2, 4] {
                    assert_eq!(shapes_at(&ours, depth), shapes_at(&theirs, depth), "{sub}");
                }
            }
            _ => assert_eq!(node_line_shapes(&ours), node_line_shapes(&theirs), "{sub}"),
        }
    }
}

/// The `redis` crate in-process: a connection per node, and the crate reads the fake's
/// redirections as Redis's.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_redis_crate_reads_a_nodes_redirection() {
    use fake_redis::{FakeConnection, NodeId, TokioClock};
    let config = EngineConfig::default();
    let cluster = Cluster::new(TokioClock::new(), config, 3, 1, ReplicaLag::default(), BASE);
    let mut first = FakeConnection::new(
        cluster.node(ServerNode::shard_primary(0)).clone(),
        NodeId(1),
    );
    let err = redis::cmd("GET")
        .arg("foo")
        .query_async::<Option<String>>(&mut first)
        .await
        .unwrap_err();
    assert_eq!(err.redirect_node(), Some(("127.0.0.1:7002", 12182)));
    let mut owner = FakeConnection::new(
        cluster.node(ServerNode::shard_primary(2)).clone(),
        NodeId(1),
    );
    let _: () = redis::cmd("SET")
        .arg("foo")
        .arg("bar")
        .query_async(&mut owner)
        .await
        .unwrap();
    let got: Option<String> = redis::cmd("GET")
        .arg("foo")
        .query_async(&mut owner)
        .await
        .unwrap();
    assert_eq!(got.as_deref(), Some("bar"));
}

/// The error a script gets, with Redis's ` script: <sha>, on @user_script:1.` suffix.
fn script_error(text: &str, body: &str) -> Frame {
    let sha = sha1_smol::Sha1::from(body).digest().to_string();
    error(&format!("{text} script: {sha}, on @user_script:1."))
}

const NON_LOCAL: &str = "ERR Script attempted to access a non local key in a cluster node";

/// Redis 7.0's `scriptVerifyClusterState`, as a real cluster node answers (`cluster_vs_redis.rs`
/// compares them): a script's call may touch any key this node serves, declared or not, in any
/// of its slots; a key served elsewhere, or keys of two slots in one call, fail the call.
#[test]
fn a_script_may_touch_only_keys_its_node_serves() {
    let (_clock, cluster) = cluster(1, 1, ReplicaLag::default());
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    assert_eq!(c.run("SET k2 local"), Frame::OK);
    // `x` (16287) is shard 2's; `k2` (449) and `b` (3300) are both shard 0's.
    let get_x = "return redis.call('get','x')";
    assert_eq!(c.eval(get_x, &[], &[]), script_error(NON_LOCAL, get_x));
    assert_eq!(c.eval(get_x, &["b"], &[]), script_error(NON_LOCAL, get_x));
    assert_eq!(
        c.eval("return redis.pcall('get','x')", &[], &[]),
        error(NON_LOCAL)
    );
    assert_eq!(
        c.eval("return redis.call('get','k2')", &["b"], &[]),
        bulk("local")
    );
    assert_eq!(
        c.eval("return redis.call('get','k2')", &[], &[]),
        bulk("local")
    );
    let mget = "return redis.call('mget','k2','b')";
    assert_eq!(c.eval(mget, &[], &[]), script_error(NON_LOCAL, mget));
    // The write before the refused call stays, as any script's does.
    let partial = "redis.call('set','b','kept') return redis.call('set','x','1')";
    assert_eq!(c.eval(partial, &[], &[]), script_error(NON_LOCAL, partial));
    assert_eq!(c.run("GET b"), bulk("kept"));
    // Shard channels route as keys; a keyless call runs anywhere.
    let spublish = "return redis.call('spublish','x','m')";
    assert_eq!(
        c.eval(spublish, &[], &[]),
        script_error(NON_LOCAL, spublish)
    );
    assert_eq!(
        c.eval("return redis.call('spublish','k2','m')", &[], &[]),
        Frame::Integer(0)
    );
    assert_eq!(
        c.eval("return redis.call('publish','ch','m')", &[], &[]),
        Frame::Integer(0)
    );
    // A replica's READONLY client reads its primary's keys in a script, as it would directly.
    let replica = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    let get_k2 = "return redis.call('get','k2')";
    assert_eq!(
        replica.eval(get_k2, &[], &[]),
        script_error(NON_LOCAL, get_k2)
    );
    assert_eq!(replica.run("READONLY"), Frame::OK);
    assert_eq!(replica.eval(get_k2, &[], &[]), bulk("local"));
}

#[test]
fn a_script_flagged_no_cluster_is_refused_on_a_cluster_node() {
    let (_clock, cluster) = cluster(1, 1, ReplicaLag::default());
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    let refused = error("ERR Can not run script on cluster, 'no-cluster' flag is set.");
    let body = "#!lua flags=no-cluster,no-writes\nreturn 1";
    assert_eq!(c.eval(body, &[], &[]), refused);
    // Before the replica's refusal of a script that may write.
    let replica = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    assert_eq!(
        replica.eval("#!lua flags=no-cluster\nreturn 1", &[], &[]),
        refused
    );
    assert_eq!(
        c.eval("#!lua flags=no-writes\nreturn 1", &[], &[]),
        Frame::Integer(1)
    );
}

#[test]
fn a_script_on_a_cluster_that_is_down_is_told_so_at_its_first_keyed_call() {
    let (_cluster, c) = down_cluster();
    let body = "return redis.call('get','b')";
    assert_eq!(
        c.eval(body, &[], &[]),
        script_error(
            "ERR Script attempted to execute a command while the cluster is down",
            body
        )
    );
    assert_eq!(
        c.eval("return redis.call('ping')", &[], &[]),
        Frame::simple("PONG")
    );
}

/// A client sent to the importing node with `ASK` runs its script there after `ASKING`: the
/// script's calls route under the `ASKING` of the `EVAL`, as Redis clears it only after the
/// command.
#[test]
fn a_script_after_asking_reaches_the_keys_of_the_slot_being_imported() {
    let (clock, cluster) = cluster(1, 0, ReplicaLag::default());
    let target = Conn::to(&cluster, ServerNode::shard_primary(1));
    cluster.add_fault(Fault::SlotMigration {
        slot: 3300,
        to_shard: 1,
        from: clock.now_ms(),
        until: clock.now_ms() + 1000,
    });
    let body = "return redis.call('set',KEYS[1],'v')";
    assert_eq!(
        target.eval(body, &["b"], &[]),
        error("MOVED 3300 127.0.0.1:7000")
    );
    assert_eq!(target.run("ASKING"), Frame::OK);
    assert_eq!(target.eval(body, &["b"], &[]), Frame::OK);
    // Spent: the next script is moved again.
    assert_eq!(
        target.eval(body, &["b"], &[]),
        error("MOVED 3300 127.0.0.1:7000")
    );
}

/// The text of a `Frame::Verbatim` or `Frame::Bulk` reply.
fn text_of(frame: Frame) -> String {
    match frame {
        Frame::Verbatim { text, .. } | Frame::Bulk(text) => {
            String::from_utf8(text.to_vec()).unwrap()
        }
        other => panic!("not text: {other:?}"),
    }
}

/// After a shard's failover, its other replicas follow the promoted primary, as a real
/// cluster's do (checked on Redis 7.0.15 with `CLUSTER FAILOVER` in a shard of a primary and
/// two replicas): `ROLE` and `INFO replication` on both sides name the new link, and the new
/// primary's writes reach them and count for its `WAIT`.
#[test]
fn after_a_failover_the_shards_other_replicas_follow_the_promoted_primary() {
    let (clock, cluster) = cluster(1, 2, ReplicaLag::fixed(10));
    let primary = Conn::to(&cluster, ServerNode::shard_primary(0));
    assert_eq!(primary.run("SET b before"), Frame::OK);
    clock.advance(10);
    cluster.add_fault(Fault::ShardFailover {
        shard: 0,
        replica: 0,
        at: clock.now_ms(),
    });
    // Shard 0: the primary on 7000, its replicas on 7003 and 7006.
    let promoted = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    let other = Conn::to(&cluster, ServerNode::shard_replica(0, 1));
    assert_eq!(promoted.run("SET b after"), Frame::OK);
    assert_eq!(promoted.run("WAIT 1 0"), Frame::Integer(0));
    clock.advance(10);
    assert_eq!(promoted.run("WAIT 1 0"), Frame::Integer(1));
    assert_eq!(other.run("READONLY"), Frame::OK);
    assert_eq!(other.run("GET b"), bulk("after"));
    let Frame::Array(role) = other.run("ROLE") else {
        panic!()
    };
    assert_eq!(
        role[..3],
        [bulk("slave"), bulk("127.0.0.1"), Frame::Integer(7003)]
    );
    let Frame::Array(role) = promoted.run("ROLE") else {
        panic!()
    };
    assert_eq!(role[0], bulk("master"));
    let Frame::Array(replicas) = &role[2] else {
        panic!()
    };
    assert_eq!(replicas.len(), 1);
    let Frame::Array(link) = &replicas[0] else {
        panic!()
    };
    assert_eq!(link[..2], [bulk("127.0.0.1"), bulk("7006")]);
    let info = text_of(other.run("INFO replication"));
    assert!(info.contains("\r\nmaster_port:7003\r\n"), "{info}");
    let info = text_of(promoted.run("INFO replication"));
    assert!(
        info.contains("\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=7006,"),
        "{info}"
    );
    // The map agrees: the replica's master is the promoted node.
    let id = text_of(promoted.run("CLUSTER MYID"));
    let nodes = text_of(other.run("CLUSTER NODES"));
    let line = nodes.lines().find(|l| l.contains(":7006@")).unwrap();
    assert!(line.contains(&format!(" myself,slave {id} ")), "{line}");
}

/// `CLUSTER GETKEYSINSLOT` lists a slot's keys newest first, as Redis 7.0's slot-to-keys list
/// does (`cluster_vs_redis.rs` compares it): an overwrite keeps a key's place, a key deleted
/// and set again, or renamed, is new.
#[test]
fn getkeysinslot_lists_the_newest_key_first() {
    let (_clock, cluster) = cluster(1, 0, ReplicaLag::default());
    let c = Conn::to(&cluster, ServerNode::shard_primary(0));
    let keys = |frame: Frame| -> Vec<String> {
        let Frame::Array(items) = frame else {
            panic!("{frame:?}")
        };
        items.into_iter().map(text_of).collect()
    };
    for key in ["b", "{b}1", "{b}2", "{b}3"] {
        assert_eq!(c.run(&format!("SET {key} v")), Frame::OK);
    }
    assert_eq!(
        keys(c.run("CLUSTER GETKEYSINSLOT 3300 10")),
        ["{b}3", "{b}2", "{b}1", "b"]
    );
    assert_eq!(c.run("SET {b}1 w"), Frame::OK);
    assert_eq!(c.run("DEL {b}2"), Frame::Integer(1));
    assert_eq!(c.run("SET {b}2 x"), Frame::OK);
    assert_eq!(
        keys(c.run("CLUSTER GETKEYSINSLOT 3300 10")),
        ["{b}2", "{b}3", "{b}1", "b"]
    );
    assert_eq!(
        keys(c.run("CLUSTER GETKEYSINSLOT 3300 2")),
        ["{b}2", "{b}3"]
    );
    assert_eq!(c.run("RENAME b {b}9"), Frame::OK);
    assert_eq!(
        keys(c.run("CLUSTER GETKEYSINSLOT 3300 10")),
        ["{b}9", "{b}2", "{b}3", "{b}1"]
    );
}

/// A second failover of the shard promotes the replica that followed the first one's primary,
/// with what that primary sent it.
#[test]
fn a_second_failover_promotes_a_replica_of_the_first_ones_primary() {
    let (clock, cluster) = cluster(1, 2, ReplicaLag::default());
    let first = Conn::to(&cluster, ServerNode::shard_primary(0));
    assert_eq!(first.run("SET b one"), Frame::OK);
    cluster.add_fault(Fault::ShardFailover {
        shard: 0,
        replica: 0,
        at: clock.now_ms(),
    });
    let second = Conn::to(&cluster, ServerNode::shard_replica(0, 0));
    assert_eq!(second.run("SET b two"), Frame::OK);
    clock.advance(1);
    // The map's replicas of shard 0 are now only 7006: it is replica 0.
    cluster.add_fault(Fault::ShardFailover {
        shard: 0,
        replica: 0,
        at: clock.now_ms(),
    });
    let third = Conn::to(&cluster, ServerNode::shard_replica(0, 1));
    assert_eq!(third.run("GET b"), bulk("two"));
    assert_eq!(third.run("SET b three"), Frame::OK);
    assert_eq!(cluster.serving(3300), Some(ServerNode::shard_replica(0, 1)));
    assert_eq!(second.run("GET b"), error("MOVED 3300 127.0.0.1:7006"));
}
