//! Cluster redirections: which node serves a call, and what a node answers when it is not that
//! node (`MOVED`, `ASK`, `TRYAGAIN`, `CROSSSLOT`, `CLUSTERDOWN`).
//!
//! Redis's `processCommand` asks `getNodeByQuery` about every call with keys on a cluster node,
//! after the ACL check and before a replica refuses writes or a transaction queues the call; an
//! `EXEC` is asked about its queued calls together. This is that function, in its order: every
//! key (and shard channel) of the call must hash to one slot (`CROSSSLOT`); a slot no node
//! serves, or a cluster down, is `CLUSTERDOWN`; a slot migrating away answers `ASK` for keys no
//! longer here (`TRYAGAIN` when some are and some are not); a slot being imported serves a call
//! that said `ASKING`; a replica serves a `READONLY` client's reads of its primary's slots;
//! anything else not served here is `MOVED`. The map it reads is the cluster's
//! (`engine/cluster.rs`), at the command's frozen time.

use super::command_docs::routing_keys;
use super::{Spec, WRITE, command_name, lookup_in};
use crate::engine::Engine;
use crate::engine::cluster::{DOWN_UNBOUND, Role, key_slot};
use crate::resp::Frame;
use bytes::Bytes;

const CROSSSLOT: Frame = Frame::error("CROSSSLOT Keys in request don't hash to the same slot");
const TRYAGAIN: Frame = Frame::error("TRYAGAIN Multiple keys request during rehashing of slot");
const DOWN: Frame = Frame::error("CLUSTERDOWN The cluster is down");

/// Whether `spec` is one of the sharded pub/sub commands, whose channels route as keys do but
/// are served by a replica without `READONLY` and by a migrating slot's source.
fn is_shard_pubsub(spec: &Spec) -> bool {
    std::ptr::eq(spec, &super::pubsub::SSUBSCRIBE)
        || std::ptr::eq(spec, &super::pubsub::SUNSUBSCRIBE)
        || std::ptr::eq(spec, &super::pubsub::SPUBLISH)
}

/// Routes client `id`'s call `argv` (of `spec`, named `name`) on a cluster node at `now`: Ok
/// when this node serves it, else the redirection or error to answer. It also spends a pending
/// `ASKING`, which holds for one call (through a transaction, to its `EXEC`).
pub(super) fn route(
    engine: &mut Engine,
    id: u64,
    spec: &'static Spec,
    name: &'static str,
    argv: &[Bytes],
    now: i64,
) -> Result<(), Frame> {
    let is_exec = std::ptr::eq(spec, &super::transactions::EXEC);
    let Some(client) = engine.client_mut(id) else {
        return Ok(());
    };
    let in_multi = client.multi.is_some();
    let asking = client.asking();
    let readonly = client.cluster_readonly();
    let keeps_asking = std::ptr::eq(spec, &super::cluster::ASKING)
        || (in_multi && !is_exec && !std::ptr::eq(spec, &super::transactions::DISCARD));
    if asking && !keeps_asking {
        client.set_asking(false);
    }
    client.set_runs_asking(asking);
    // The calls to route: the call itself, or an `EXEC`'s queue.
    let calls: Vec<Vec<Bytes>> = match (is_exec, &client.multi) {
        (false, _) => vec![argv.to_vec()],
        (true, Some(m)) => m.queue.clone(),
        (true, None) => return Ok(()),
    };
    let call = Call {
        spec,
        name,
        is_exec,
        asking,
        readonly,
    };
    locate(engine, &call, &calls, now)
}

/// Redis's `scriptVerifyClusterState`: a script's `redis.call` (of `spec`, named `name`) runs
/// only if this node would serve it as a call of the script's client, under that client's
/// `READONLY` and `ASKING`. Redis 7.0 does not check that the script declared the key, nor that
/// its keys share a slot with the declared ones: only that they are served here. A refusal is
/// worded as the script sees it; a `CROSSSLOT` or a slot no node serves is a non-local key too.
pub(crate) fn route_script_call(
    engine: &mut Engine,
    id: u64,
    spec: &'static Spec,
    name: &'static str,
    argv: &[Bytes],
    now: i64,
) -> Result<(), &'static str> {
    let Some(client) = engine.client_mut(id) else {
        return Ok(());
    };
    let call = Call {
        spec,
        name,
        is_exec: false,
        asking: client.asking() || client.runs_asking(),
        readonly: client.cluster_readonly(),
    };
    match locate(engine, &call, std::slice::from_ref(&argv.to_vec()), now) {
        Ok(()) => Ok(()),
        Err(e) if e == DOWN => {
            Err("ERR Script attempted to execute a command while the cluster is down")
        }
        Err(_) => Err("ERR Script attempted to access a non local key in a cluster node"),
    }
}

/// A call as routing sees it.
struct Call {
    spec: &'static Spec,
    name: &'static str,
    /// An `EXEC`, whose queued calls route together.
    is_exec: bool,
    /// Under `ASKING`.
    asking: bool,
    /// The client said `READONLY`.
    readonly: bool,
}

/// Redis's `getNodeByQuery` for `calls` (one call, or an `EXEC`'s queue): Ok when this node
/// serves them, else the redirection or error to answer.
fn locate(engine: &mut Engine, call: &Call, calls: &[Vec<Bytes>], now: i64) -> Result<(), Frame> {
    let (spec, asking, readonly) = (call.spec, call.asking, call.readonly);
    let mut is_write = spec.has(WRITE);
    let shard_pubsub = is_shard_pubsub(spec);
    // The first key, its slot, whether other keys differ from it.
    let mut first: Option<(Bytes, u16)> = None;
    let mut multiple_keys = false;
    let mut keys: Vec<Bytes> = Vec::new();
    let version = engine.version();
    for argv in calls {
        let Some(call_spec) = argv.first().and_then(|n| lookup_in(version, n)) else {
            continue;
        };
        is_write |= call_spec.has(WRITE);
        let full = if std::ptr::eq(call_spec, spec) && !call.is_exec {
            call.name
        } else {
            command_name(version, call_spec, argv).unwrap_or(call_spec.name)
        };
        for at in routing_keys(version, full, argv) {
            let key = &argv[at];
            let slot = key_slot(key);
            match &first {
                None => first = Some((key.clone(), slot)),
                Some((k, s)) if k != key => {
                    if *s != slot {
                        return Err(CROSSSLOT);
                    }
                    multiple_keys = true;
                }
                Some(_) => {}
            }
            keys.push(key.clone());
        }
    }
    // No key at all: any node serves it.
    let Some((_, slot)) = first else {
        return Ok(());
    };
    let Some(member) = engine.cluster_member() else {
        return Ok(());
    };
    let (shared, me, my_shard) = (member.shared.clone(), member.me, member.shard);
    let state = shared.state(now);
    let Some(serving) = state.owner_node(slot) else {
        return Err(DOWN_UNBOUND);
    };
    if !state.is_ok() && !shard_pubsub {
        return Err(DOWN);
    }
    let migration = state.migration(slot, now);
    let migrating = serving == me && migration.is_some_and(|m| m.from_shard == my_shard);
    let importing = !migrating
        && migration
            .is_some_and(|m| m.to_shard == my_shard && state.primary_of(my_shard) == Some(me));
    let ask_to = migration
        .and_then(|m| state.primary_of(m.to_shard))
        .map(|n| state.nodes[n].port);
    let serving_port = state.nodes[serving].port;
    // Read only on the way to a redirection (an atomic count, not the text).
    let ip = std::sync::Arc::clone(&state.ip);
    let my_role = state.nodes[me].role;
    let my_primary = state.primary_of(my_shard);
    drop(state);
    let (mut missing, mut existing) = (0, 0);
    if (migrating || importing) && !shard_pubsub {
        let db = engine.db_mut(0);
        for key in &keys {
            if db.peek(key, now).is_some() {
                existing += 1;
            } else {
                missing += 1;
            }
        }
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Err(TRYAGAIN);
        }
        let port = ask_to.unwrap_or(serving_port);
        return Err(redirection("ASK", slot, &ip, port));
    }
    let asking_call = asking || std::ptr::eq(spec, &super::dump::RESTORE_ASKING);
    if importing && asking_call {
        if multiple_keys && missing > 0 {
            return Err(TRYAGAIN);
        }
        return Ok(());
    }
    if (readonly || shard_pubsub)
        && !is_write
        && my_role == Role::Replica
        && my_primary == Some(serving)
    {
        return Ok(());
    }
    if serving != me {
        return Err(redirection("MOVED", slot, &ip, serving_port));
    }
    Ok(())
}

/// `MOVED 3999 127.0.0.1:6381` (or `ASK …`), an IPv6 address unbracketed as Redis writes it.
fn redirection(kind: &str, slot: u16, ip: &str, port: u16) -> Frame {
    Frame::error_owned(format!("{kind} {slot} {ip}:{port}"))
}
