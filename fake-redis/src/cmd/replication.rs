//! The replication commands: `WAIT`, `REPLICAOF`/`SLAVEOF`, and what `ROLE` and `INFO
//! replication` say, over the node's replication state (`engine/replication.rs`).
//!
//! A node of the fake replicates only inside the topology it was built in, so `REPLICAOF` does
//! what applies to it: `NO ONE` promotes a replica, and naming the primary it follows already is
//! Redis's no-op; any other address is refused instead of being followed.

use super::{Args, Caller, CmdResult, Cx, Spec, is};
use crate::resp::Frame;

pub(crate) static WAIT: Spec = Spec::new("wait", 3, 0, wait_command);
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
        .wait_for_replicas(id, replicas, timeout, now, may_block)
    {
        Some(acked) => Ok(Frame::Integer(acked)),
        // Not a reply: the driver sees the client blocked and waits for the real one.
        None => Ok(Frame::Null),
    }
}

/// `REPLICAOF host port` and its old name `SLAVEOF` (see the [module docs](self)).
fn replicaof_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let host = args.next_bytes()?;
    let port = args.next_bytes()?;
    if is(host, "no") && is(port, "one") {
        cx.node().promote();
        return Ok(Frame::OK);
    }
    let port = match super::int(port) {
        Ok(p) if (0..=65535).contains(&p) => p,
        _ => return Err(Frame::error("ERR Invalid master port")),
    };
    let following = cx.engine().followed_primary_port() == Some(port);
    if following && host.as_ref() == cx.engine().announced_host().as_bytes() {
        return Ok(Frame::simple("OK Already connected to specified master"));
    }
    Err(Frame::error(
        "ERR a fake-redis node replicates only within the topology it was built in",
    ))
}

/// `ROLE`: the primary with its replicas' acknowledged offsets, or a replica with its primary.
pub(crate) fn role(cx: &mut Cx<'_>) -> Frame {
    cx.engine().role_reply()
}
