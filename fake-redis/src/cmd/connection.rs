//! Connection and server commands: the handshake (`HELLO`, `AUTH`, `SELECT`), naming, `PING`,
//! `QUIT`/`RESET`, and what a client may ask about the server (`TIME`, `INFO`,
//! `WAIT`; `COMMAND` has its own file, `command_docs.rs`).
//!
//! `HELLO 3` switches the connection to RESP3; the engine keeps building the same frames and the
//! encoder (or a front door) decides the bytes. `WAIT` replies 0: the fake has no replicas, only
//! the failover fault that models losing their lag.

use super::{
    Args, Cx, NO_AUTH, NOT_QUEUED, PUBSUB_CONTEXT, Reply, Spec, int, is, unknown_subcommand,
    wrong_arity,
};
use crate::engine::{Client, DATABASES, REDIS_VERSION, Subscription};
use crate::resp::Frame;
use bytes::Bytes;
use std::fmt::Write;

pub(crate) static PING: Spec = Spec::new("ping", -1, PUBSUB_CONTEXT, ping_command);
pub(crate) static ECHO: Spec = Spec::new("echo", 2, 0, echo_command);
pub(crate) static HELLO: Spec = Spec::new("hello", -1, NO_AUTH, hello_command);
pub(crate) static AUTH: Spec = Spec::new("auth", -2, NO_AUTH, auth_command);
pub(crate) static SELECT: Spec = Spec::new("select", 2, 0, select_command);
pub(crate) static CLIENT: Spec = Spec::new("client", -2, 0, client_command);
pub(crate) static QUIT: Spec = Spec::new(
    "quit",
    -1,
    NO_AUTH | PUBSUB_CONTEXT | NOT_QUEUED,
    quit_command,
);
pub(crate) static RESET: Spec = Spec::new(
    "reset",
    1,
    NO_AUTH | PUBSUB_CONTEXT | NOT_QUEUED,
    reset_command,
);
pub(crate) static TIME: Spec = Spec::new("time", 1, 0, time_command);
pub(crate) static INFO: Spec = Spec::new("info", -1, 0, info_command);
pub(crate) static WAIT: Spec = Spec::new("wait", 3, 0, wait_command);

fn ping_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    if args.remaining() > 1 {
        return Err(wrong_arity("ping"));
    }
    let message = args.next();
    if cx.client().in_pubsub_context() {
        // A subscribed RESP2 connection answers in the shape of a message.
        let payload = message.cloned().unwrap_or_default();
        return Ok(Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"pong")),
            Frame::Bulk(payload),
        ]));
    }
    Ok(match message {
        Some(msg) => Frame::Bulk(msg.clone()),
        None => Frame::simple("PONG"),
    })
}

fn echo_command(_cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    Ok(Frame::Bulk(args.next_bytes()?.clone()))
}

/// Checks credentials against the `default` user (the fake has no other): its password is
/// `requirepass`, or any password when none is set.
fn authenticate(cx: &mut Cx<'_>, user: &[u8], password: &[u8]) -> Result<(), Frame> {
    let ok = user == b"default"
        && cx
            .engine()
            .config()
            .requirepass
            .as_ref()
            .is_none_or(|p| &p[..] == password);
    if ok {
        cx.client().authenticated = true;
        Ok(())
    } else {
        Err(Frame::error(
            "WRONGPASS invalid username-password pair or user is disabled.",
        ))
    }
}

/// `AUTH password` or `AUTH user password`.
fn auth_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    match args.rest() {
        [password] => {
            if cx.engine().config().requirepass.is_none() {
                return Err(Frame::error(
                    "ERR AUTH <password> called without any password configured for the default \
                     user. Are you sure your configuration is correct?",
                ));
            }
            authenticate(cx, b"default", password)?;
        }
        [user, password] => authenticate(cx, user, password)?,
        _ => return Err(super::SYNTAX),
    }
    Ok(Frame::OK)
}

fn valid_client_name(name: &[u8]) -> Result<(), Frame> {
    if name.iter().all(|b| (b'!'..=b'~').contains(b)) {
        Ok(())
    } else {
        Err(Frame::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ))
    }
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`.
fn hello_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let protocol = match args.next() {
        None => None,
        Some(v) => {
            let Ok(v) = int(v) else {
                return Err(Frame::error(
                    "ERR Protocol version is not an integer or out of range",
                ));
            };
            if !(2..=3).contains(&v) {
                return Err(Frame::error("NOPROTO unsupported protocol version"));
            }
            Some(v as u8)
        }
    };
    let mut credentials = None;
    let mut name = None;
    while let Some(opt) = args.next() {
        let more = args.remaining();
        if is(opt, "auth") && more >= 2 {
            credentials = Some((args.next_bytes()?, args.next_bytes()?));
        } else if is(opt, "setname") && more >= 1 {
            let new_name = args.next_bytes()?;
            valid_client_name(new_name)?;
            name = Some(new_name.clone());
        } else {
            return Err(super::error_echoing(&[
                b"ERR Syntax error in HELLO option '",
                super::c_text(opt, usize::MAX),
                b"'",
            ]));
        }
    }
    if let Some((user, password)) = credentials {
        authenticate(cx, user, password)?;
    }
    let id = cx.client;
    let client = cx.client();
    if !client.authenticated {
        return Err(Frame::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
             the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = name {
        client.name = (!name.is_empty()).then_some(name);
    }
    if let Some(p) = protocol {
        client.protocol = p;
    }
    let proto = client.protocol;
    let field = |k: &'static str| Frame::Bulk(Bytes::from_static(k.as_bytes()));
    Ok(Frame::Map(vec![
        (field("server"), field("redis")),
        (field("version"), field(REDIS_VERSION)),
        (field("proto"), Frame::Integer(i64::from(proto))),
        (field("id"), Frame::Integer(id as i64)),
        (field("mode"), field("standalone")),
        (field("role"), field("master")),
        (field("modules"), Frame::Array(Vec::new())),
    ]))
}

fn select_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let index = args.next_int()?;
    if !(0..DATABASES as i64).contains(&index) {
        return Err(Frame::error("ERR DB index is out of range"));
    }
    cx.client().db = index as usize;
    cx.db = index as usize;
    Ok(Frame::OK)
}

/// `CLIENT ID`, `GETNAME`, `SETNAME name`, `INFO`, `LIST`.
fn client_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let sub = args.next_bytes()?;
    // The subcommand's arity: exactly `n` arguments after it.
    let exact = |args: &Args<'_>, n: usize, name: &str| {
        if args.remaining() == n {
            Ok(())
        } else {
            Err(wrong_arity(name))
        }
    };
    if is(sub, "id") {
        exact(args, 0, "client|id")?;
        return Ok(Frame::Integer(cx.client as i64));
    }
    if is(sub, "getname") {
        exact(args, 0, "client|getname")?;
        return Ok(cx.client().name.clone().map_or(Frame::Null, Frame::Bulk));
    }
    if is(sub, "setname") {
        exact(args, 1, "client|setname")?;
        let name = args.next_bytes()?;
        valid_client_name(name)?;
        cx.client().name = (!name.is_empty()).then(|| name.clone());
        return Ok(Frame::OK);
    }
    if is(sub, "info") {
        exact(args, 0, "client|info")?;
        let (now, id) = (cx.now, cx.client);
        let line = client_line(now, id, cx.client());
        return Ok(Frame::text(line));
    }
    if is(sub, "list") {
        let now = cx.now;
        let text: String = cx
            .engine()
            .clients()
            .map(|(id, c)| client_line(now, id, c))
            .collect();
        return Ok(Frame::text(text));
    }
    Err(unknown_subcommand("CLIENT", sub))
}

/// One line of `CLIENT LIST` for connection `id`.
fn client_line(now: i64, id: u64, c: &Client) -> String {
    let name = c
        .name
        .as_ref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    format!(
        "id={id} addr=in-process:{id} laddr=in-process:0 fd=-1 name={name} age={} idle={} \
         flags={} db={} sub={} psub={} ssub=0 multi={} resp={}\n",
        (now - c.created_at).max(0) / 1000,
        (now - c.last_command_at).max(0) / 1000,
        if c.subscriptions() > 0 { "P" } else { "N" },
        c.db,
        c.subscription_count(Subscription::Channel),
        c.subscription_count(Subscription::Pattern),
        c.multi.as_ref().map_or(-1, |m| m.queue.len() as i64),
        c.protocol,
    )
}

fn quit_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> Reply {
    cx.client().closing = true;
    Ok(Frame::OK)
}

/// `RESET`: the connection as it was when it opened (no transaction, watches, subscriptions or
/// name; database 0; RESP2; unauthenticated if the server needs a password).
fn reset_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> Reply {
    cx.unwatch();
    let needs_auth = cx.engine().config().requirepass.is_some();
    let client = cx.client();
    client.multi = None;
    client.db = 0;
    client.protocol = 2;
    client.name = None;
    client.authenticated = !needs_auth;
    cx.unsubscribe_all();
    cx.db = 0;
    Ok(Frame::simple("RESET"))
}

fn time_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> Reply {
    let now = cx.now;
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from(now.div_euclid(1000).to_string())),
        Frame::Bulk(Bytes::from((now.rem_euclid(1000) * 1000).to_string())),
    ]))
}

/// `INFO [section…]`: the sections a client may look at (server, clients, stats, cluster,
/// keyspace).
fn info_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let wanted: Vec<String> = args
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let now = cx.now;
    let engine = cx.engine();
    let mut sections = Vec::new();
    if want("server") {
        let uptime = (now - engine.started_at()).max(0) / 1000;
        let mut s = String::from("# Server\r\n");
        let _ = write!(
            s,
            "redis_version:{REDIS_VERSION}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n\
             redis_mode:standalone\r\nos:fake-redis (in-process)\r\narch_bits:64\r\n\
             server_time_usec:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\n\
             hz:10\r\n",
            now.saturating_mul(1000),
            uptime / 86_400
        );
        sections.push(s);
    }
    if want("clients") {
        let mut s = String::from("# Clients\r\n");
        let _ = write!(
            s,
            "connected_clients:{}\r\ncluster_connections:0\r\nmaxclients:10000\r\n\
             blocked_clients:0\r\ntracking_clients:0\r\n",
            engine.client_count()
        );
        sections.push(s);
    }
    if want("stats") {
        let expired: u64 = engine.dbs().iter().map(|d| d.stats.expired_keys).sum();
        let mut s = String::from("# Stats\r\n");
        let _ = write!(
            s,
            "total_connections_received:{}\r\ntotal_commands_processed:{}\r\nexpired_keys:{expired}\r\n\
             pubsub_channels:{}\r\npubsub_patterns:{}\r\n",
            engine.stats().connections,
            engine.stats().commands,
            engine.channel_count(),
            engine.pattern_count()
        );
        sections.push(s);
    }
    if want("cluster") {
        // Client test suites (redis-py's conftest) read `cluster_enabled` before their first test
        // to choose between a standalone client and a cluster one.
        sections.push(String::from("# Cluster\r\ncluster_enabled:0\r\n"));
    }
    if want("keyspace") {
        let mut s = String::from("# Keyspace\r\n");
        for (i, db) in engine.dbs().iter().enumerate() {
            if db.len() > 0 {
                let _ = write!(
                    s,
                    "db{i}:keys={},expires={},avg_ttl=0\r\n",
                    db.len(),
                    db.volatile_len()
                );
            }
        }
        sections.push(s);
    }
    Ok(Frame::text(sections.join("\r\n")))
}

/// `WAIT numreplicas timeout`: 0, the fake has no replicas.
fn wait_command(_cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    args.next_int()?;
    if args.next_int()? < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    Ok(Frame::Integer(0))
}
