//! `REPLICAOF host port` naming a primary nobody answers for: Redis says `OK` and keeps trying
//! in the background, a replica with its link down meanwhile. Redis 7.4.1's transaction suite
//! leans on it (a transaction that demotes its own server, `EXEC` refused once the server is a
//! stale replica). The replies were read off redis-server 7.0.15, 7.4.1 and valkey-server
//! 9.1.2; with `REDIS_7_0_SERVER`, `REDIS_7_4_SERVER` or `VALKEY_SERVER` naming a binary, the
//! one-connection table asks that server too (port 1 of the loopback refuses at once, so a real
//! server's `ROLE` shows the same `connect` state as the fake's).

use crate::versions::{assert_cases, engine};
use bytes::Bytes;
use fake_redis::{ClientId, Engine, Frame, Version};

const READONLY: &str = "-READONLY You can't write against a read only replica.\r\n";
const MASTERDOWN: &str =
    "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n";

const ONE_CONNECTION: &[(&str, &str)] = &[
    ("SET k v", "+OK\r\n"),
    ("REPLICAOF localhost 1", "+OK\r\n"),
    ("SET k w", READONLY),
    ("GET k", "$1\r\nv\r\n"),
    (
        "ROLE",
        "*5\r\n$5\r\nslave\r\n$9\r\nlocalhost\r\n:1\r\n$7\r\nconnect\r\n:-1\r\n",
    ),
    (
        "REPLICAOF LOCALHOST 1",
        "+OK Already connected to specified master\r\n",
    ),
    ("REPLICAOF localhost 99999", "-ERR Invalid master port\r\n"),
    ("CONFIG SET replica-serve-stale-data no", "+OK\r\n"),
    ("GET k", MASTERDOWN),
    ("PING", MASTERDOWN),
    ("MULTI", "+OK\r\n"),
    ("GET k", MASTERDOWN),
    (
        "EXEC",
        "-EXECABORT Transaction discarded because of previous errors.\r\n",
    ),
    ("CONFIG SET replica-serve-stale-data yes", "+OK\r\n"),
    ("REPLICAOF NO ONE", "+OK\r\n"),
    ("SET k w", "+OK\r\n"),
    ("ROLE", "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"),
    // Inside a transaction the commands after the demotion still run: `EXEC` checks nothing
    // again per command.
    ("MULTI", "+OK\r\n"),
    ("SET k x", "+QUEUED\r\n"),
    ("REPLICAOF localhost 1", "+QUEUED\r\n"),
    ("SET k y", "+QUEUED\r\n"),
    ("EXEC", "*3\r\n+OK\r\n+OK\r\n+OK\r\n"),
    ("GET k", "$1\r\ny\r\n"),
    ("SET k z", READONLY),
    ("REPLICAOF NO ONE", "+OK\r\n"),
];

#[test]
fn a_replica_of_an_unreachable_primary_answers_as_redis_s() {
    assert_cases(Version::V7_0, "REDIS_7_0_SERVER", ONE_CONNECTION);
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", ONE_CONNECTION);
    assert_cases(Version::Valkey9_1, "VALKEY_SERVER", ONE_CONNECTION);
}

fn call(e: &mut Engine, c: ClientId, line: &str) -> Frame {
    let argv: Vec<Bytes> = line.split(' ').map(|w| Bytes::from(w.to_owned())).collect();
    e.execute(c, &argv)
}

fn error(text: &str) -> Frame {
    Frame::error_owned(text.to_owned())
}

/// What another client changes between a transaction's queueing and its `EXEC` refuses the
/// `EXEC` by what its queue holds, as Redis's `processCommand` judges it: writes on a server that
/// became a replica, or with too few replicas for `min-replicas-to-write`; anything not flagged
/// `stale` on a replica whose link is down under `replica-serve-stale-data no`.
#[test]
fn exec_is_refused_for_what_changed_since_its_commands_were_queued() {
    let mut e = engine(Version::V7_4);
    let (a, b) = (e.connect(), e.connect());
    let abort = |reason: &str| {
        error(&format!(
            "EXECABORT Transaction discarded because of: {reason}"
        ))
    };
    for line in ["MULTI", "INCR xx"] {
        call(&mut e, a, line);
    }
    assert_eq!(
        call(&mut e, b, "CONFIG SET min-replicas-to-write 2"),
        Frame::OK
    );
    assert_eq!(
        call(&mut e, a, "EXEC"),
        abort("NOREPLICAS Not enough good replicas to write.")
    );
    assert_eq!(
        call(&mut e, b, "SET y 1"),
        error("NOREPLICAS Not enough good replicas to write.")
    );
    assert_eq!(call(&mut e, b, "GET y"), Frame::Null);
    call(&mut e, b, "CONFIG SET min-replicas-to-write 0");

    for line in ["MULTI", "INCR xx"] {
        call(&mut e, a, line);
    }
    call(&mut e, b, "REPLICAOF localhost 1");
    assert_eq!(
        call(&mut e, a, "EXEC"),
        abort("READONLY You can't write against a read only replica.")
    );
    call(&mut e, b, "REPLICAOF NO ONE");

    for line in ["MULTI", "GET xx"] {
        call(&mut e, a, line);
    }
    call(&mut e, b, "REPLICAOF localhost 1");
    call(&mut e, b, "CONFIG SET replica-serve-stale-data no");
    assert_eq!(
        call(&mut e, a, "EXEC"),
        abort("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")
    );
    // `MULTI` is flagged `stale`; the link coming back lets the queued read run.
    assert_eq!(call(&mut e, a, "MULTI"), Frame::OK);
    call(&mut e, b, "REPLICAOF NO ONE");
    assert_eq!(call(&mut e, a, "GET xx"), Frame::simple("QUEUED"));
    assert_eq!(call(&mut e, a, "EXEC"), Frame::Array(vec![Frame::Null]));
}

/// Becoming a replica ends every block with Redis's `UNBLOCKED`, and the blocked connection
/// closes after it.
#[test]
fn becoming_a_replica_unblocks_and_closes_blocked_clients() {
    let mut e = engine(Version::V7_4);
    let (a, b) = (e.connect(), e.connect());
    let blpop: Vec<Bytes> = ["BLPOP", "l", "0"]
        .map(|w| Bytes::from_static(w.as_bytes()))
        .to_vec();
    assert_eq!(e.execute_or_block(a, &blpop), None);
    assert_eq!(call(&mut e, b, "REPLICAOF localhost 1"), Frame::OK);
    assert_eq!(
        e.take_unblocked_reply(a),
        Some(error(
            "UNBLOCKED force unblock from blocking operation, instance state changed \
             (master -> replica?)"
        ))
    );
    assert!(!e.is_connected(a));
    assert!(e.is_connected(b));
}

/// The text of `INFO`'s reply.
fn info_text(reply: Frame) -> String {
    match reply {
        Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => {
            String::from_utf8_lossy(&b).into_owned()
        }
        other => panic!("INFO answers text, not {other:?}"),
    }
}

/// `INFO replication` of such a replica: its primary's address and a link that is down and
/// was never up.
#[test]
fn info_replication_shows_the_link_down() {
    let mut e = engine(Version::V7_4);
    let c = e.connect();
    call(&mut e, c, "REPLICAOF localhost 1");
    let info = info_text(call(&mut e, c, "INFO replication"));
    assert!(
        info.starts_with(
            "# Replication\r\nrole:slave\r\nmaster_host:localhost\r\nmaster_port:1\r\n\
             master_link_status:down\r\nmaster_last_io_seconds_ago:-1\r\n\
             master_sync_in_progress:0\r\nslave_read_repl_offset:0\r\nslave_repl_offset:0\r\n\
             master_link_down_since_seconds:-1\r\nslave_priority:100\r\nslave_read_only:1\r\n\
             replica_announced:1\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
        ),
        "{info}"
    );
    call(&mut e, c, "REPLICAOF NO ONE");
    let info = info_text(call(&mut e, c, "INFO replication"));
    assert!(
        info.starts_with("# Replication\r\nrole:master\r\n"),
        "{info}"
    );
}
