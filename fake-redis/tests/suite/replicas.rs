//! Replicas on virtual time: the write stream's lag, `READONLY`, `WAIT`, the replica's expiry
//! rule, a stalled replica, a promotion that loses what was in flight, and replay from a seed.
//! The replies and error texts are Redis 7.0.15's, as a primary and a replica of it answer them.

use bytes::Bytes;
use fake_redis::{
    ClientId, Engine, EngineConfig, FakeConnection, Fault, Frame, ManualClock, NodeId, ReplicaLag,
    ServerNode, TokioClock, Topology,
};
use std::sync::{Arc, Mutex};

const T0: i64 = 1_700_000_000_000;

fn argv(line: &str) -> Vec<Bytes> {
    line.split(' ')
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

/// The text of a bulk or verbatim reply (`INFO`).
fn text_of(frame: &Frame) -> Option<String> {
    match frame {
        Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => {
            Some(String::from_utf8(b.to_vec()).unwrap())
        }
        _ => None,
    }
}

fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

/// A topology on a manual clock, and one connection to each node.
struct Rig {
    clock: ManualClock,
    topology: Topology,
    clients: Vec<ClientId>,
}

impl Rig {
    fn new(replicas: u16, lag: ReplicaLag) -> Rig {
        Rig::seeded(replicas, lag, EngineConfig::default().seed)
    }

    fn seeded(replicas: u16, lag: ReplicaLag, seed: u64) -> Rig {
        let clock = ManualClock::new(T0);
        let config = EngineConfig {
            seed,
            ..EngineConfig::default()
        };
        let topology =
            Topology::with_replicas(Engine::with_config(clock.clone(), config), replicas, lag);
        let clients = topology
            .nodes()
            .map(|(_, e)| e.lock().unwrap().connect())
            .collect();
        Rig {
            clock,
            topology,
            clients,
        }
    }

    fn engine(&self, node: ServerNode) -> &Arc<Mutex<Engine>> {
        self.topology.node(node)
    }

    fn client(&self, node: ServerNode) -> ClientId {
        self.clients[node.replica_index().map_or(0, |i| usize::from(i) + 1)]
    }

    fn run(&self, node: ServerNode, line: &str) -> Frame {
        let client = self.client(node);
        self.engine(node)
            .lock()
            .unwrap()
            .execute(client, &argv(line))
    }

    fn primary(&self, line: &str) -> Frame {
        self.run(ServerNode::PRIMARY, line)
    }

    fn replica(&self, line: &str) -> Frame {
        self.run(ServerNode::replica(0), line)
    }

    fn at(&self, ms: i64) {
        self.clock.set(T0 + ms);
    }
}

const PRIMARY: ServerNode = ServerNode::PRIMARY;

#[test]
fn a_write_reaches_the_replica_exactly_after_the_lag() {
    let rig = Rig::new(1, ReplicaLag::fixed(50));
    assert_eq!(rig.primary("SET lease held"), Frame::OK);
    assert_eq!(rig.replica("GET lease"), Frame::Null);
    rig.at(49);
    assert_eq!(rig.replica("GET lease"), Frame::Null);
    rig.at(50);
    assert_eq!(rig.replica("GET lease"), bulk("held"));
    // A deletion travels the same way, with the deadline of a key that has one.
    assert_eq!(rig.primary("SET latch 1 PX 10000"), Frame::OK);
    assert_eq!(rig.primary("DEL lease"), Frame::Integer(1));
    rig.at(99);
    assert_eq!(rig.replica("EXISTS lease"), Frame::Integer(1));
    rig.at(100);
    assert_eq!(rig.replica("EXISTS lease"), Frame::Integer(0));
    assert_eq!(rig.replica("PTTL latch"), Frame::Integer(9950));
}

#[test]
fn a_swapdb_on_the_primary_reaches_the_replica() {
    let rig = Rig::new(1, ReplicaLag::fixed(10));
    assert_eq!(rig.primary("SET zero 0"), Frame::OK);
    assert_eq!(rig.primary("SWAPDB 0 1"), Frame::OK);
    rig.at(10);
    assert_eq!(rig.replica("EXISTS zero"), Frame::Integer(0));
    assert_eq!(rig.replica("SELECT 1"), Frame::OK);
    assert_eq!(rig.replica("GET zero"), bulk("0"));
}

#[test]
fn a_replica_refuses_writes_with_readonly_and_serves_reads() {
    let rig = Rig::new(1, ReplicaLag::fixed(0));
    let readonly = Frame::error("READONLY You can't write against a read only replica.");
    assert_eq!(rig.replica("SET a 1"), readonly);
    assert_eq!(rig.replica("DEL a"), readonly);
    assert_eq!(rig.replica("GET a"), Frame::Null);
    // Inside a transaction the write is refused as it queues, and EXEC aborts.
    assert_eq!(rig.replica("MULTI"), Frame::OK);
    assert_eq!(rig.replica("SET b 1"), readonly);
    assert_eq!(rig.replica("GET b"), Frame::simple("QUEUED"));
    assert_eq!(
        rig.replica("EXEC"),
        Frame::error("EXECABORT Transaction discarded because of previous errors.")
    );
    // A script runs, and its write call fails with Redis's text.
    let script = Frame::error(
        "READONLY You can't write against a read only replica. script: \
         67ed14c1cb086d8c2fcf91ebe13410ba087fd0f8, on @user_script:1.",
    );
    let eval = [
        Bytes::from_static(b"EVAL"),
        Bytes::from_static(b"return redis.call('set','a','1')"),
        Bytes::from_static(b"0"),
    ];
    let client = rig.client(ServerNode::replica(0));
    let reply = rig
        .engine(ServerNode::replica(0))
        .lock()
        .unwrap()
        .execute(client, &eval);
    assert_eq!(reply, script);
    // A script whose shebang does not say `no-writes` is refused before it runs, even one that
    // writes nothing, and before the `_RO` rule; one that says it runs (as redis-server 7.0.15
    // answers on a replica).
    let eval = |body: &str, command: &'static str| {
        let argv = [
            Bytes::from_static(command.as_bytes()),
            Bytes::copy_from_slice(body.as_bytes()),
            Bytes::from_static(b"0"),
        ];
        rig.engine(ServerNode::replica(0))
            .lock()
            .unwrap()
            .execute(client, &argv)
    };
    assert_eq!(eval("#!lua\nreturn 1", "EVAL"), readonly);
    assert_eq!(eval("#!lua\nreturn 1", "EVAL_RO"), readonly);
    assert_eq!(
        eval("#!lua flags=no-writes\nreturn 1", "EVAL"),
        Frame::Integer(1)
    );
    assert_eq!(eval("return 1", "EVAL"), Frame::Integer(1));
    assert_eq!(rig.primary("SET a 1"), Frame::OK);
    assert_eq!(rig.replica("GET a"), bulk("1"));
}

#[test]
fn wait_answers_zero_then_one_as_the_lag_passes() {
    let rig = Rig::new(1, ReplicaLag::fixed(50));
    // A client that never wrote waits for nothing.
    assert_eq!(rig.primary("WAIT 1 0"), Frame::Integer(1));
    assert_eq!(rig.primary("SET a 1"), Frame::OK);
    assert_eq!(rig.primary("WAIT 1 0"), Frame::Integer(0));
    rig.at(49);
    assert_eq!(rig.primary("WAIT 1 0"), Frame::Integer(0));
    rig.at(50);
    assert_eq!(rig.primary("WAIT 1 0"), Frame::Integer(1));
    assert_eq!(rig.primary("WAIT 0 0"), Frame::Integer(1));
    // Inside a transaction WAIT answers at once.
    assert_eq!(rig.primary("SET a 2"), Frame::OK);
    assert_eq!(rig.primary("MULTI"), Frame::OK);
    assert_eq!(rig.primary("WAIT 5 0"), Frame::simple("QUEUED"));
    assert_eq!(rig.primary("EXEC"), Frame::Array(vec![Frame::Integer(0)]));
}

#[test]
fn wait_blocks_until_the_acknowledgement_or_its_timeout_on_the_engine_clock() {
    let rig = Rig::new(2, ReplicaLag::fixed(50));
    rig.topology
        .primary()
        .lock()
        .unwrap()
        .add_fault(Fault::ReplicaStall {
            replica: 1,
            from: T0,
            until: T0 + 10_000,
        });
    let client = rig.client(PRIMARY);
    let engine = rig.topology.primary().clone();
    let mut e = engine.lock().unwrap();
    // The reply the blocked client has once the clock reads `ms` and the engine caught up.
    let reply_at = |e: &mut Engine, ms: i64| {
        rig.at(ms);
        e.catch_up();
        e.take_unblocked_reply(client)
    };
    assert_eq!(e.execute(client, &argv("SET a 1")), Frame::OK);
    // One replica acknowledges at 50: a WAIT for one is answered then.
    assert_eq!(e.execute_or_block(client, &argv("WAIT 1 0")), None);
    assert_eq!(e.block_deadline(client), Some(T0 + 50));
    assert_eq!(reply_at(&mut e, 49), None);
    assert_eq!(reply_at(&mut e, 50), Some(Frame::Integer(1)));
    // The stalled one cannot: a WAIT for two times out on the engine's clock with the count.
    assert_eq!(e.execute_or_block(client, &argv("WAIT 2 100")), None);
    assert_eq!(e.block_deadline(client), Some(T0 + 150));
    assert_eq!(reply_at(&mut e, 149), None);
    assert_eq!(reply_at(&mut e, 150), Some(Frame::Integer(1)));
    // WAIT with timeout 0 waits for ever: here until the stall ends.
    assert_eq!(e.execute_or_block(client, &argv("WAIT 2 0")), None);
    assert_eq!(e.block_deadline(client), Some(T0 + 10_000));
    assert_eq!(reply_at(&mut e, 10_000), Some(Frame::Integer(2)));
}

#[test]
fn wait_replies_and_errors_as_redis() {
    let rig = Rig::new(1, ReplicaLag::fixed(0));
    assert_eq!(
        rig.primary("WAIT x 0"),
        Frame::error("ERR value is not an integer or out of range")
    );
    assert_eq!(
        rig.primary("WAIT 1 x"),
        Frame::error("ERR timeout is not an integer or out of range")
    );
    assert_eq!(
        rig.primary("WAIT 1 -1"),
        Frame::error("ERR timeout is negative")
    );
    assert_eq!(
        rig.primary("WAIT 1"),
        Frame::error("ERR wrong number of arguments for 'wait' command")
    );
    assert_eq!(
        rig.replica("WAIT 0 0"),
        Frame::error(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis \
             4.0 if a replica is configured to be writable (which is not the default) writes to \
             replicas are just local and are not propagated."
        )
    );
    assert_eq!(rig.primary("WAIT 1 9223372036854775807"), Frame::Integer(1));
    // Without replicas a WAIT for none answers at once.
    let alone = Rig::new(0, ReplicaLag::fixed(0));
    assert_eq!(alone.primary("WAIT 0 0"), Frame::Integer(0));
}

#[tokio::test(start_paused = true)]
async fn wait_through_a_fake_connection_returns_when_the_replica_has_the_write() {
    let topology =
        Topology::with_replicas(Engine::new(TokioClock::new()), 1, ReplicaLag::fixed(50));
    let mut primary = FakeConnection::new(topology.primary().clone(), NodeId(1));
    let mut replica = FakeConnection::new(topology.node(ServerNode::replica(0)).clone(), NodeId(1));
    let start = tokio::time::Instant::now();
    let () = redis::cmd("SET")
        .arg("lease")
        .arg("held")
        .query_async(&mut primary)
        .await
        .unwrap();
    let seen: Option<String> = redis::cmd("GET")
        .arg("lease")
        .query_async(&mut replica)
        .await
        .unwrap();
    assert_eq!(seen, None);
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(1000)
        .query_async(&mut primary)
        .await
        .unwrap();
    assert_eq!(acked, 1);
    assert_eq!(start.elapsed(), std::time::Duration::from_millis(50));
    let seen: Option<String> = redis::cmd("GET")
        .arg("lease")
        .query_async(&mut replica)
        .await
        .unwrap();
    assert_eq!(seen.as_deref(), Some("held"));
}

#[test]
fn an_expired_key_is_hidden_on_the_replica_until_the_primary_deletes_it() {
    let rig = Rig::new(1, ReplicaLag::fixed(10));
    assert_eq!(rig.primary("SET lease held PX 100"), Frame::OK);
    rig.at(20);
    assert_eq!(rig.replica("GET lease"), bulk("held"));
    // Past its deadline the replica hides it, but keeps it: the primary has not deleted it.
    rig.at(101);
    assert_eq!(rig.replica("GET lease"), Frame::Null);
    assert_eq!(rig.replica("EXISTS lease"), Frame::Integer(0));
    assert_eq!(rig.replica("TTL lease"), Frame::Integer(-2));
    assert_eq!(rig.replica("DBSIZE"), Frame::Integer(1));
    rig.at(500);
    assert_eq!(rig.replica("DBSIZE"), Frame::Integer(1));
    // The primary's access deletes it; the deletion arrives after the lag.
    assert_eq!(rig.primary("GET lease"), Frame::Null);
    rig.at(509);
    assert_eq!(rig.replica("DBSIZE"), Frame::Integer(1));
    rig.at(510);
    assert_eq!(rig.replica("DBSIZE"), Frame::Integer(0));
}

#[test]
fn a_stalled_replica_applies_and_acknowledges_nothing_until_the_stall_ends() {
    let rig = Rig::new(1, ReplicaLag::fixed(5));
    rig.topology
        .primary()
        .lock()
        .unwrap()
        .add_fault(Fault::ReplicaStall {
            replica: 0,
            from: T0 + 100,
            until: T0 + 2_100,
        });
    assert_eq!(rig.primary("SET before 1"), Frame::OK);
    rig.at(100);
    assert_eq!(rig.primary("SET during 1"), Frame::OK);
    rig.at(1_100);
    assert_eq!(rig.replica("GET before"), bulk("1"));
    assert_eq!(rig.replica("GET during"), Frame::Null);
    assert_eq!(rig.primary("WAIT 1 0"), Frame::Integer(0));
    let info = rig.primary("INFO replication");
    let text = text_of(&info).unwrap();
    assert!(text.contains(",state=online,"), "{text}");
    assert!(text.contains(",lag=1\r\n"), "{text}");
    rig.at(2_100);
    assert_eq!(rig.replica("GET during"), bulk("1"));
    assert_eq!(rig.primary("WAIT 1 0"), Frame::Integer(1));
}

#[test]
fn a_promoted_replica_keeps_what_it_received_and_loses_what_was_in_flight() {
    let rig = Rig::new(1, ReplicaLag::fixed(50));
    assert_eq!(rig.primary("SET acquired 1"), Frame::OK);
    rig.at(60);
    assert_eq!(rig.primary("SET unreplicated 1"), Frame::OK);
    rig.at(70);
    assert_eq!(rig.replica("REPLICAOF NO ONE"), Frame::OK);
    assert_eq!(rig.replica("GET acquired"), bulk("1"));
    assert_eq!(rig.replica("GET unreplicated"), Frame::Null);
    rig.at(200);
    assert_eq!(rig.replica("GET unreplicated"), Frame::Null);
    // It takes writes now, and its old primary no longer counts it.
    assert_eq!(rig.replica("SET taken 2"), Frame::OK);
    assert_eq!(rig.primary("SET later 1"), Frame::OK);
    let role = rig.replica("ROLE");
    let Frame::Array(role) = role else {
        panic!("{role:?}")
    };
    assert_eq!(role[0], bulk("master"));
    assert_eq!(role[2], Frame::Array(Vec::new()));
    let info = rig.primary("INFO replication");
    let text = text_of(&info).unwrap();
    assert!(text.contains("\r\nconnected_slaves:0\r\n"), "{text}");
    // SLAVEOF NO ONE on a primary is a no-op.
    assert_eq!(rig.primary("SLAVEOF NO ONE"), Frame::OK);
}

#[test]
fn role_and_info_replication_have_redis_s_shape() {
    let rig = Rig::new(1, ReplicaLag::fixed(0));
    assert_eq!(rig.primary("SET a 1"), Frame::OK);
    let Frame::Array(role) = rig.primary("ROLE") else {
        panic!("ROLE is an array")
    };
    let Frame::Integer(offset) = role[1] else {
        panic!("{role:?}")
    };
    assert!(offset > 0);
    let offset_text = offset.to_string();
    assert_eq!(
        role,
        vec![
            bulk("master"),
            Frame::Integer(offset),
            Frame::Array(vec![Frame::Array(vec![
                bulk("127.0.0.1"),
                bulk("6380"),
                bulk(&offset_text),
            ])]),
        ]
    );
    assert_eq!(
        rig.replica("ROLE"),
        Frame::Array(vec![
            bulk("slave"),
            bulk("127.0.0.1"),
            Frame::Integer(6379),
            bulk("connected"),
            Frame::Integer(offset),
        ])
    );
    let fields = |frame: Frame| -> Vec<String> {
        let text = text_of(&frame).unwrap();
        text.split("\r\n")
            .filter(|l| !l.is_empty())
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    };
    // The fields, in order, of Redis 7.0.15's primary with one replica, and of that replica.
    assert_eq!(
        fields(rig.primary("INFO replication")),
        [
            "# Replication",
            "role",
            "connected_slaves",
            "slave0",
            "master_failover_state",
            "master_replid",
            "master_replid2",
            "master_repl_offset",
            "second_repl_offset",
            "repl_backlog_active",
            "repl_backlog_size",
            "repl_backlog_first_byte_offset",
            "repl_backlog_histlen",
        ]
    );
    assert_eq!(
        fields(rig.replica("INFO replication")),
        [
            "# Replication",
            "role",
            "master_host",
            "master_port",
            "master_link_status",
            "master_last_io_seconds_ago",
            "master_sync_in_progress",
            "slave_read_repl_offset",
            "slave_repl_offset",
            "slave_priority",
            "slave_read_only",
            "replica_announced",
            "connected_slaves",
            "master_failover_state",
            "master_replid",
            "master_replid2",
            "master_repl_offset",
            "second_repl_offset",
            "repl_backlog_active",
            "repl_backlog_size",
            "repl_backlog_first_byte_offset",
            "repl_backlog_histlen",
        ]
    );
    let info = rig.primary("INFO replication");
    let text = text_of(&info).unwrap();
    assert!(
        text.contains(&format!(
            "\r\nslave0:ip=127.0.0.1,port=6380,state=online,offset={offset},lag=0\r\n"
        )),
        "{text}"
    );
    assert!(text.contains(&format!("\r\nmaster_repl_offset:{offset}\r\n")));
}

#[test]
fn replicaof_answers_as_redis_where_it_applies() {
    let rig = Rig::new(1, ReplicaLag::fixed(0));
    let arity = Frame::error("ERR wrong number of arguments for 'replicaof' command");
    assert_eq!(rig.replica("REPLICAOF"), arity);
    assert_eq!(rig.replica("REPLICAOF no one x"), arity);
    let port = Frame::error("ERR Invalid master port");
    assert_eq!(rig.replica("REPLICAOF 127.0.0.1 abc"), port);
    assert_eq!(rig.replica("REPLICAOF 127.0.0.1 -1"), port);
    assert_eq!(
        rig.replica("REPLICAOF 127.0.0.1 6379"),
        Frame::simple("OK Already connected to specified master")
    );
    assert_eq!(
        rig.replica("REPLICAOF 127.0.0.1 6379"),
        rig.replica("SLAVEOF 127.0.0.1 6379")
    );
}

/// What a reader of the replica sees, each millisecond, while the primary writes with a
/// jittered lag.
fn trace(seed: u64) -> Vec<(i64, Frame)> {
    let rig = Rig::seeded(1, ReplicaLag::jittered(20, 30), seed);
    let mut seen = Vec::new();
    for ms in 0..200 {
        rig.at(ms);
        if ms % 7 == 0 && ms < 140 {
            assert_eq!(rig.primary("INCR counter"), Frame::Integer(ms / 7 + 1));
        }
        seen.push((ms, rig.replica("GET counter")));
    }
    seen
}

#[test]
fn the_same_seed_replays_the_same_trace() {
    let first = trace(42);
    assert_eq!(first, trace(42));
    // The jitter is drawn: another seed moves arrivals.
    assert_ne!(first, trace(43));
    // Arrivals keep their order: the counter the replica shows never goes back.
    let values: Vec<i64> = first
        .iter()
        .filter_map(|(_, f)| text_of(f).map(|t| t.parse().unwrap()))
        .collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(values.last(), Some(&20));
}
