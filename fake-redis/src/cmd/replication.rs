//! The replication commands: `WAIT`, `REPLICAOF`/`SLAVEOF`, and what `ROLE` and `INFO
//! replication` say, over the node's replication state (`engine/replication.rs`); and the
//! commands a replica sends its primary (`REPLCONF`, `SYNC`, `PSYNC`) and `FAILOVER`.
//!
//! A node of the fake replicates only inside the topology it was built in, so `REPLICAOF` does
//! what applies to it: `NO ONE` promotes a replica, and naming the primary it follows already is
//! Redis's no-op. Any other address is a primary the node never reaches: it becomes a replica
//! whose link stays down (`engine/replication/elsewhere.rs`), as a Redis replica of a primary
//! that is not there. A cluster node refuses the command, as Redis's does.
//!
//! `REPLCONF` checks its options as the release's server does and answers them; `ACK` and
//! `GETACK` from a client that is no replica get no reply at all, as on the real server. `SYNC`
//! and `PSYNC` reach this table only where the TCP server does not stream the dataset itself
//! (`server/connection.rs` does, for a client that may run them): through the in-process door,
//! which carries no RDB file, they are refused. `FAILOVER` checks its arguments and the node's
//! state in the server's order; a primary with replicas does not coordinate a failover (the
//! test handle's `failover` fault does that), and says so.

use super::{Args, Caller, CmdResult, Cx, NOT_INTEGER, SYNTAX, Spec, is};
use crate::resp::{Frame, split_args};

pub(crate) static WAIT: Spec = Spec::new("wait", 3, 0, wait_command);
pub(crate) static WAITAOF: Spec = Spec::new("waitaof", 4, 0, waitaof_command);
pub(crate) static REPLICAOF: Spec = Spec::new("replicaof", 3, 0, replicaof_command);
pub(crate) static SLAVEOF: Spec = Spec::new("slaveof", 3, 0, replicaof_command);
pub(crate) static REPLCONF: Spec = Spec::new("replconf", -1, 0, replconf_command);
pub(crate) static SYNC: Spec = Spec::new("sync", 1, 0, sync_command);
pub(crate) static PSYNC: Spec = Spec::new("psync", -3, 0, sync_command);
pub(crate) static FAILOVER: Spec = Spec::new("failover", -1, 0, failover_command);

/// `WAIT numreplicas timeout`: how many replicas acknowledged the client's last write, once
/// `numreplicas` have or the timeout (ms on the engine's clock, 0 for ever) passes. A transaction's
/// `WAIT`, or one through a door that cannot wait, answers the count at once, as Redis does when
/// the client may not block.
fn wait_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if cx.engine().is_read_only_replica() {
        return Err(Frame::error(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 \
             if a replica is configured to be writable (which is not the default) writes to \
             replicas are just local and are not propagated.",
        ));
    }
    let replicas = args.next_int()?;
    let timeout = args
        .next_int()
        .map_err(|_| Frame::error("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    let may_block = cx.may_block && cx.caller == Caller::Client;
    let (id, now) = (cx.client, cx.now);
    match cx
        .node()
        .wait_for_replicas(id, replicas, timeout, now, may_block, None)
    {
        Some(reply) => Ok(reply),
        // Not a reply: the driver sees the client blocked and waits for the real one.
        None => Ok(Frame::Null),
    }
}

/// `WAITAOF numlocal numreplicas timeout` (Redis 7.2 and later): `[local, replicas]`, how many
/// of this server (0 or 1) and of its replicas have the client's last write in their append-only
/// file, once `numlocal` and `numreplicas` have or the timeout passes. The fake writes no file:
/// with `appendonly yes` its writes count as fsynced at once (as `appendfsync always`), so the
/// local count is 1; a replica counts once it acknowledged the write, as for `WAIT`.
fn waitaof_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let numlocal = args.next_int()?;
    if !(0..=1).contains(&numlocal) {
        return Err(Frame::error(
            "ERR value is out of range, value must between 0 and 1",
        ));
    }
    let replicas = match super::int(args.next_bytes()?) {
        Ok(n) if n >= 0 => n,
        _ => return Err(Frame::error("ERR value is out of range, must be positive")),
    };
    let timeout = args
        .next_int()
        .map_err(|_| Frame::error("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    if cx.engine().is_read_only_replica() {
        return Err(Frame::error(
            "ERR WAITAOF cannot be used with replica instances. Please also note that writes to \
             replicas are just local and are not propagated.",
        ));
    }
    let appendonly = cx.engine().config().appendonly();
    if numlocal == 1 && !appendonly {
        return Err(Frame::error(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    let local = i64::from(appendonly);
    let may_block = cx.may_block && cx.caller == Caller::Client;
    let (id, now) = (cx.client, cx.now);
    match cx
        .node()
        .wait_for_replicas(id, replicas, timeout, now, may_block, Some(local))
    {
        Some(reply) => Ok(reply),
        None => Ok(Frame::Null),
    }
}

/// `REPLICAOF host port` and its old name `SLAVEOF` (see the [module docs](self)).
fn replicaof_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if cx.engine().is_cluster_node() {
        return Err(Frame::error("ERR REPLICAOF not allowed in cluster mode."));
    }
    let host = args.next_bytes()?;
    let port = args.next_bytes()?;
    if is(host, "no") && is(port, "one") {
        cx.node().promote();
        return Ok(Frame::OK);
    }
    let Some(port) = super::int(port).ok().and_then(|p| u16::try_from(p).ok()) else {
        return Err(Frame::error("ERR Invalid master port"));
    };
    let engine = cx.engine();
    let following = engine.followed_primary_port() == Some(i64::from(port))
        && host.eq_ignore_ascii_case(engine.announced_host().as_bytes());
    let following_elsewhere = engine
        .followed_elsewhere()
        .is_some_and(|(h, p)| p == port && h.eq_ignore_ascii_case(host));
    if following || following_elsewhere {
        return Ok(Frame::simple("OK Already connected to specified master"));
    }
    cx.node().follow_elsewhere(host.clone(), port);
    Ok(Frame::OK)
}

/// `ROLE`: the primary with its replicas' acknowledged offsets, or a replica with its primary.
pub(crate) fn role(cx: &mut Cx<'_>) -> Frame {
    cx.engine().role_reply()
}

/// `REPLCONF option value [option value …]`: each option checked in turn, the first refusal
/// answered; `+OK` once all passed. Valkey adds `VERSION`, `RDB-CHANNEL`, `SET-RDB-CLIENT-ID`
/// and `SET-CLUSTER-NODE-ID` to Redis's options.
fn replconf_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() % 2 == 1 {
        return Err(SYNTAX);
    }
    let valkey = cx.engine().version().is_valkey();
    while let (Ok(option), Ok(value)) = (args.next_bytes(), args.next_bytes()) {
        let option_is = |name: &str| is(option, name);
        if option_is("listening-port") {
            super::int(value)?;
        } else if option_is("ip-address") {
            // Redis's NET_HOST_STR_LEN, its terminating zero counted.
            if value.len() >= 256 {
                return Err(Frame::error_owned(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                )));
            }
        } else if option_is("capa") {
            // Capabilities the server does not know are ignored.
        } else if option_is("ack") || option_is("getack") {
            // From a client that is no replica: nothing, not even a reply. Inside `EXEC` the
            // server leaves a hole in the array it announced; the fake answers `+OK` there.
            if cx.caller == Caller::Client {
                cx.client().no_reply = true;
            }
            return Ok(Frame::OK);
        } else if option_is("rdb-only") || (valkey && option_is("rdb-channel")) {
            zero_or_one(value)?;
        } else if option_is("rdb-filter-only") {
            let Some(filters) = split_args(value) else {
                return Err(Frame::error("ERR Missing rdb-filter-only values"));
            };
            if let Some(other) = filters.iter().find(|f| !is(f, "functions")) {
                return Err(Frame::error_owned(format!(
                    "ERR Unsupported rdb-filter-only option: {}",
                    String::from_utf8_lossy(other)
                )));
            }
        } else if valkey && option_is("version") {
            if !is_version(value) {
                return Err(Frame::error_owned(format!(
                    "ERR Unrecognized version format: {}",
                    String::from_utf8_lossy(value)
                )));
            }
        } else if valkey && option_is("set-rdb-client-id") {
            // No connection of the fake is a replica's RDB channel.
            let id = super::int(value)?;
            return Err(Frame::error_owned(format!(
                "ERR Unrecognized RDB client id {id}"
            )));
        } else if valkey && option_is("set-cluster-node-id") {
            if !cx.engine().is_cluster_node() {
                return Err(Frame::error(
                    "ERR This instance has cluster support disabled",
                ));
            }
        } else {
            return Err(Frame::error_owned(format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(option)
            )));
        }
    }
    Ok(Frame::OK)
}

/// A flag of `REPLCONF`: 0 or 1, with Redis's range error.
fn zero_or_one(value: &[u8]) -> Result<i64, Frame> {
    match super::int(value)? {
        n @ 0..=1 => Ok(n),
        _ => Err(Frame::error(
            "ERR value is out of range, value must between 0 and 1",
        )),
    }
}

/// Whether `text` is a release as Valkey's `version2num` reads one: three parts of digits,
/// each at most 255, joined by dots (an empty part counts as 0).
fn is_version(text: &[u8]) -> bool {
    let mut parts = 0;
    for part in text.split(|&b| b == b'.') {
        parts += 1;
        if !part.iter().all(u8::is_ascii_digit) {
            return false;
        }
        let n = part.iter().fold(0u32, |n, &d| {
            n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
        });
        if n > 255 {
            return false;
        }
    }
    parts == 3 && !text.is_empty()
}

/// `SYNC` and `PSYNC replid offset`, where the server's door did not take them: the checks a
/// lone primary makes (`PSYNC … FAILOVER` is for a replica, the offset is a number), then a
/// refusal, as no RDB file travels through the in-process door.
fn sync_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if let Some(refusal) = psync_refusal(cx.engine(), args.whole()) {
        return Err(refusal);
    }
    Err(Frame::error(
        "ERR SYNC and PSYNC stream the dataset only over fake-redis-server's TCP door",
    ))
}

/// Why the server refuses `argv`'s `PSYNC` before it starts a full sync: `PSYNC … FAILOVER` sent
/// to a primary, an offset that is not a number; None for `SYNC`, and for a `PSYNC` it serves.
pub(crate) fn psync_refusal(
    engine: &crate::engine::Engine,
    argv: &[bytes::Bytes],
) -> Option<Frame> {
    if !argv.first().is_some_and(|name| is(name, "psync")) || argv.len() < 3 {
        return None;
    }
    if argv.get(3).is_some_and(|a| is(a, "failover")) && !engine.is_read_only_replica() {
        return Some(Frame::error(
            "ERR PSYNC FAILOVER can't be sent to a master.",
        ));
    }
    super::int(&argv[2]).err()
}

/// `FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]`, checked in the server's order (see the
/// [module docs](self)).
fn failover_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if cx.engine().is_cluster_node() {
        return Err(Frame::error(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        ));
    }
    let argv = args.whole();
    if argv.len() == 2 && is(&argv[1], "abort") {
        // The fake never has a failover in progress.
        return Err(Frame::error("ERR No failover in progress."));
    }
    let (mut timeout, mut force, mut target) = (0, false, None);
    let mut j = 1;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if is(&argv[j], "timeout") && more >= 1 && timeout == 0 {
            timeout = super::int(&argv[j + 1]).map_err(|_| NOT_INTEGER)?;
            if timeout <= 0 {
                return Err(Frame::error("ERR FAILOVER timeout must be greater than 0"));
            }
            j += 2;
        } else if is(&argv[j], "to") && more >= 2 && target.is_none() {
            let port = super::int(&argv[j + 2])?;
            target = Some((argv[j + 1].clone(), port));
            j += 3;
        } else if is(&argv[j], "force") && !force {
            force = true;
            j += 1;
        } else {
            return Err(SYNTAX);
        }
    }
    let engine = cx.engine();
    if engine.is_read_only_replica() {
        return Err(Frame::error(
            "ERR FAILOVER is not valid when server is a replica.",
        ));
    }
    if engine.connected_replicas() == 0 {
        return Err(Frame::error("ERR FAILOVER requires connected replicas."));
    }
    if force && (timeout == 0 || target.is_none()) {
        return Err(Frame::error(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    Err(Frame::error(
        "ERR FAILOVER is not coordinated by fake-redis: use the test handle's failover fault",
    ))
}
