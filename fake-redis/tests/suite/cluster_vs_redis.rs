//! A cluster node's replies byte for byte against a real Redis 7.0 cluster node of this test's
//! own: one redis-server with `cluster-enabled yes` that owns the slots of the fake's shard 0
//! (0-5460), on a free loopback port. The fake side is shard 0's primary of a fresh 3-shard
//! cluster. A key of another slot is another shard's on the fake and no node's on the real one:
//! a script reaching it gets the same error from both, which is why the cases use it.

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::encode;
use fake_redis::{
    ClientId, Cluster, Engine, EngineConfig, Fault, ManualClock, ReplicaLag, ServerNode,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::OwnServer;
use support::raw::{self, Real, eval};

/// A real cluster node owning slots 0-5460, `cluster_state:ok` unless `full_coverage` (then
/// the unowned slots keep it down, as a fake shard left without a primary does).
fn real_node(full_coverage: bool) -> (OwnServer, Real) {
    let server = OwnServer::start_with(&[
        "--cluster-enabled".into(),
        "yes".into(),
        "--cluster-config-file".into(),
        "nodes.conf".into(),
        "--cluster-require-full-coverage".into(),
        if full_coverage { "yes" } else { "no" }.into(),
    ]);
    let mut real = Real::connect(server.port);
    let added = real.call(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"5460"]);
    assert_eq!(added, b"+OK\r\n");
    let want: &[u8] = if full_coverage {
        b"cluster_state:fail"
    } else {
        b"cluster_state:ok"
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !real
        .call(&[b"CLUSTER", b"INFO"])
        .windows(want.len())
        .any(|w| w == want)
    {
        assert!(
            Instant::now() < deadline,
            "the real node never reached {want:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (server, real)
}

/// Shard 0's primary of a fresh cluster of three shards, through a client of its own.
struct FakeNode {
    _cluster: Cluster,
    engine: Arc<Mutex<Engine>>,
    id: ClientId,
}

impl FakeNode {
    fn new(down: bool) -> FakeNode {
        let cluster = Cluster::new(
            ManualClock::default(),
            EngineConfig::default(),
            3,
            0,
            ReplicaLag::default(),
            7000,
        );
        if down {
            cluster.add_fault(Fault::ShardFailover {
                shard: 1,
                replica: 0,
                at: 0,
            });
        }
        let engine = cluster.node(ServerNode::shard_primary(0)).clone();
        let id = engine.lock().unwrap().connect();
        FakeNode {
            _cluster: cluster,
            engine,
            id,
        }
    }

    fn call(&self, argv: &[&[u8]]) -> Vec<u8> {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let reply = self.engine.lock().unwrap().execute(self.id, &argv);
        let mut out = BytesMut::new();
        encode(&reply, 2, &mut out);
        out.to_vec()
    }
}

/// Runs `commands` in order on a real node and a fake one, both down with `full_coverage` (see
/// `real_node`), and fails with every reply whose bytes differ.
#[track_caller]
fn assert_same_as_redis(full_coverage: bool, commands: &[&[&str]]) {
    let (_server, mut real) = real_node(full_coverage);
    let fake = FakeNode::new(full_coverage);
    let found = mismatches(&mut real, &fake, commands);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Runs `commands` on both, in order; one line per reply whose bytes differ.
fn mismatches(real: &mut Real, fake: &FakeNode, commands: &[&[&str]]) -> Vec<String> {
    let mut out = Vec::new();
    for argv in commands {
        let args: Vec<&[u8]> = raw::words(argv).iter().map(|a| a.as_bytes()).collect();
        let (want, got) = (real.call(&args), fake.call(&args));
        if want != got {
            out.push(raw::mismatch(&format!("{argv:?}"), &want, &got));
        }
    }
    out
}

/// Redis 7.0's `scriptVerifyClusterState`: a script's call reaches any key its node serves,
/// declared or not, and fails on a key it does not serve, or on keys of two slots in one call.
#[test]
fn a_scripts_calls_reach_only_the_keys_its_node_serves() {
    assert_same_as_redis(
        false,
        &[
            &["SET k2 local"],
            eval!("return redis.call('get','x')"),
            &["EVAL", "return redis.call('get','x')", "1", "b"],
            eval!("return redis.pcall('get','x')"),
            &["EVAL", "return redis.call('get','k2')", "1", "b"],
            eval!("return redis.call('get','k2')"),
            eval!("return redis.call('mget','k2','b')"),
            eval!("return redis.call('mget','b','{b}2')"),
            eval!("redis.call('set','b','kept') return redis.call('set','x','1')"),
            &["GET b"],
            eval!("return redis.call('spublish','x','m')"),
            eval!("return redis.call('spublish','k2','m')"),
            eval!("return redis.call('publish','ch','m')"),
            eval!("#!lua flags=no-cluster,no-writes\nreturn 1"),
            eval!("#!lua flags=allow-cross-slot-keys\nreturn redis.call('get','x')"),
            eval!("#!lua flags=no-writes\nreturn redis.call('get','k2')"),
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=lib\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'no-cluster'}}",
            ],
            &["FCALL f 0"],
            &["FCALL_RO f 0"],
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=far\nredis.register_function('g', function() return redis.call('get','x') end)",
            ],
            &["FCALL g 0"],
        ],
    );
}

/// On a cluster that is down, a keyless script runs, and its first call with a key is told so.
#[test]
fn a_script_on_a_cluster_that_is_down_is_told_so() {
    assert_same_as_redis(
        true,
        &[
            eval!("return redis.call('get','b')"),
            eval!("return redis.pcall('get','b')"),
            eval!("return redis.call('ping')"),
            &["GET b"],
        ],
    );
}

/// `CLUSTER GETKEYSINSLOT` lists a slot's keys newest first; an overwrite keeps a key's place,
/// and a key deleted and created again, or renamed, is new.
#[test]
fn getkeysinslot_lists_keys_in_redis_s_order() {
    assert_same_as_redis(
        false,
        &[
            &["SET b v"],
            &["SET {b}1 v"],
            &["HSET {b}2 f v"],
            &["SET {b}3 v"],
            &["CLUSTER GETKEYSINSLOT 3300 10"],
            &["SET {b}1 w"],
            &["CLUSTER GETKEYSINSLOT 3300 10"],
            &["DEL {b}2"],
            &["SET {b}2 x"],
            &["CLUSTER GETKEYSINSLOT 3300 10"],
            &["CLUSTER GETKEYSINSLOT 3300 2"],
            &["RENAME b {b}9"],
            &["CLUSTER GETKEYSINSLOT 3300 10"],
            &["CLUSTER GETKEYSINSLOT 3300 0"],
            &["CLUSTER GETKEYSINSLOT 449 10"],
        ],
    );
}
