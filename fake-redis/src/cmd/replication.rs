//! The replication commands: `WAIT`, `REPLICAOF`/`SLAVEOF`, and what `ROLE` and `INFO
//! replication` say, over the node's replication state (`engine/replication.rs`).
//!
//! A node of the fake replicates only inside the topology it was built in, so `REPLICAOF` does
//! what applies to it: `NO ONE` promotes a replica, and naming the primary it follows already is
//! Redis's no-op. Any other address is a primary the node never reaches: it becomes a replica
//! whose link stays down (`engine/replication/elsewhere.rs`), as a Redis replica of a primary
//! that is not there. A cluster node refuses the command, as Redis's does.

use super::{Args, Caller, CmdResult, Cx, Spec, is};
use crate::resp::Frame;

pub(crate) static WAIT: Spec = Spec::new("wait", 3, 0, wait_command);
pub(crate) static WAITAOF: Spec = Spec::new("waitaof", 4, 0, waitaof_command);
pub(crate) static REPLICAOF: Spec = Spec::new("replicaof", 3, 0, replicaof_command);
pub(crate) static SLAVEOF: Spec = Spec::new("slaveof", 3, 0, replicaof_command);

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
