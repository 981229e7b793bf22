//! Connection and server commands: the handshake (`HELLO`, `AUTH`, `SELECT`), naming, `PING`,
//! `QUIT`/`RESET`, and what a client may ask about the server (`TIME`, `INFO`, `WAIT`, `COMMAND`).
//!
//! `HELLO 3` switches the connection to RESP3; the engine keeps building the same frames and the
//! encoder (or a front door) decides the bytes. `WAIT` replies 0: the fake has no replicas, only
//! the failover fault that models losing their lag.

use super::{
    ALL, NO_AUTH, NOT_QUEUED, PUBSUB_CONTEXT, Spec, int, is, unknown_subcommand, wrong_arity,
};
use crate::engine::{Cx, DATABASES, REDIS_VERSION};
use crate::frame::Frame;
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
pub(crate) static COMMAND: Spec = Spec::new("command", -1, 0, command_command);

fn ping_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 2 {
        return wrong_arity("ping");
    }
    let client = cx.client();
    if client.protocol == 2 && client.subscriptions() > 0 {
        // A subscribed RESP2 connection answers in the shape of a message.
        let payload = argv.get(1).cloned().unwrap_or_default();
        return Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"pong")),
            Frame::Bulk(payload),
        ]);
    }
    match argv.get(1) {
        Some(msg) => Frame::Bulk(msg.clone()),
        None => Frame::simple("PONG"),
    }
}

fn echo_command(_cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    Frame::Bulk(argv[1].clone())
}

/// Checks credentials against the `default` user (the fake has no other): its password is
/// `requirepass`, or any password when none is set.
fn authenticate(cx: &mut Cx<'_>, user: &[u8], password: &[u8]) -> Result<(), Frame> {
    let ok = user == b"default"
        && cx
            .engine
            .config
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

fn auth_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let result = match argv {
        [_, password] => {
            if cx.engine.config.requirepass.is_none() {
                return Frame::error(
                    "ERR AUTH <password> called without any password configured for the default \
                     user. Are you sure your configuration is correct?",
                );
            }
            authenticate(cx, b"default", password)
        }
        [_, user, password] => authenticate(cx, user, password),
        _ => return super::SYNTAX,
    };
    result.map_or_else(|e| e, |()| Frame::OK)
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

fn hello_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let mut protocol = None;
    let mut next = 1;
    if let Some(v) = argv.get(1) {
        let Ok(v) = int(v) else {
            return Frame::error("ERR Protocol version is not an integer or out of range");
        };
        if !(2..=3).contains(&v) {
            return Frame::error("NOPROTO unsupported protocol version");
        }
        protocol = Some(v as u8);
        next = 2;
    }
    let mut credentials = None;
    let mut name = None;
    let mut j = next;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = &argv[j];
        if is(opt, "auth") && more >= 2 {
            credentials = Some((argv[j + 1].clone(), argv[j + 2].clone()));
            j += 3;
        } else if is(opt, "setname") && more >= 1 {
            if let Err(e) = valid_client_name(&argv[j + 1]) {
                return e;
            }
            name = Some(argv[j + 1].clone());
            j += 2;
        } else {
            return Frame::error_owned(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            ));
        }
    }
    if let Some((user, password)) = credentials
        && let Err(e) = authenticate(cx, &user, &password)
    {
        return e;
    }
    let id = cx.client;
    let client = cx.client();
    if !client.authenticated {
        return Frame::error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO AUTH <user> <pass> option can be used to authenticate the client and select \
             the RESP protocol version at the same time",
        );
    }
    if let Some(name) = name {
        client.name = (!name.is_empty()).then_some(name);
    }
    if let Some(p) = protocol {
        client.protocol = p;
    }
    let proto = client.protocol;
    let field = |k: &'static str| Frame::Bulk(Bytes::from_static(k.as_bytes()));
    Frame::Map(vec![
        (field("server"), field("redis")),
        (field("version"), field(REDIS_VERSION)),
        (field("proto"), Frame::Integer(i64::from(proto))),
        (field("id"), Frame::Integer(id as i64)),
        (field("mode"), field("standalone")),
        (field("role"), field("master")),
        (field("modules"), Frame::Array(Vec::new())),
    ])
}

fn select_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let Ok(index) = int(&argv[1]) else {
        return super::NOT_INTEGER;
    };
    if !(0..DATABASES as i64).contains(&index) {
        return Frame::error("ERR DB index is out of range");
    }
    cx.client().db = index as usize;
    cx.db = index as usize;
    Frame::OK
}

fn client_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let sub = &argv[1];
    let exact = |n: usize, name: &str| (argv.len() != n).then(|| wrong_arity(name));
    if is(sub, "id") {
        if let Some(e) = exact(2, "client|id") {
            return e;
        }
        return Frame::Integer(cx.client as i64);
    }
    if is(sub, "getname") {
        if let Some(e) = exact(2, "client|getname") {
            return e;
        }
        return cx.client().name.clone().map_or(Frame::Null, Frame::Bulk);
    }
    if is(sub, "setname") {
        if let Some(e) = exact(3, "client|setname") {
            return e;
        }
        if let Err(e) = valid_client_name(&argv[2]) {
            return e;
        }
        let name = argv[2].clone();
        cx.client().name = (!name.is_empty()).then_some(name);
        return Frame::OK;
    }
    if is(sub, "info") {
        if let Some(e) = exact(2, "client|info") {
            return e;
        }
        let id = cx.client;
        let line = client_line(cx, id);
        return Frame::Bulk(Bytes::from(line));
    }
    if is(sub, "list") {
        let ids: Vec<u64> = cx.engine.clients.keys().copied().collect();
        let text: String = ids.into_iter().map(|id| client_line(cx, id)).collect();
        return Frame::Bulk(Bytes::from(text));
    }
    unknown_subcommand("CLIENT", sub)
}

fn client_line(cx: &mut Cx<'_>, id: u64) -> String {
    let now = cx.now;
    let Some(c) = cx.engine.clients.get(&id) else {
        return String::new();
    };
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
        c.channels.len(),
        c.patterns.len(),
        c.multi.as_ref().map_or(-1, |m| m.queue.len() as i64),
        c.protocol,
    )
}

fn quit_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    cx.client().closing = true;
    Frame::OK
}

fn reset_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    let id = cx.client;
    cx.engine.unwatch(id);
    let needs_auth = cx.engine.config.requirepass.is_some();
    let client = cx.client();
    client.multi = None;
    client.db = 0;
    client.protocol = 2;
    client.name = None;
    client.authenticated = !needs_auth;
    let channels = std::mem::take(&mut client.channels);
    let patterns = std::mem::take(&mut client.patterns);
    for ch in channels {
        crate::engine::remove_subscriber(&mut cx.engine.channels, &ch, id);
    }
    for p in patterns {
        crate::engine::remove_subscriber(&mut cx.engine.patterns, &p, id);
    }
    cx.db = 0;
    Frame::simple("RESET")
}

fn time_command(cx: &mut Cx<'_>, _argv: &[Bytes]) -> Frame {
    let now = cx.now;
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(now.div_euclid(1000).to_string())),
        Frame::Bulk(Bytes::from((now.rem_euclid(1000) * 1000).to_string())),
    ])
}

fn info_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let wanted: Vec<String> = argv[1..]
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let now = cx.now;
    let engine = &*cx.engine;
    let mut sections = Vec::new();
    if want("server") {
        let uptime = (now - engine.started_at).max(0) / 1000;
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
            engine.clients.len()
        );
        sections.push(s);
    }
    if want("stats") {
        let expired: u64 = engine.dbs.iter().map(|d| d.stats.expired_keys).sum();
        let mut s = String::from("# Stats\r\n");
        let _ = write!(
            s,
            "total_connections_received:{}\r\ntotal_commands_processed:{}\r\nexpired_keys:{expired}\r\n\
             pubsub_channels:{}\r\npubsub_patterns:{}\r\n",
            engine.stats.connections,
            engine.stats.commands,
            engine.channels.len(),
            engine.patterns.len()
        );
        sections.push(s);
    }
    if want("keyspace") {
        let mut s = String::from("# Keyspace\r\n");
        for (i, db) in engine.dbs.iter().enumerate() {
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
    Frame::Bulk(Bytes::from(sections.join("\r\n")))
}

fn wait_command(_cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    if let Err(e) = int(&argv[1]) {
        return e;
    }
    match int(&argv[2]) {
        Err(e) => e,
        Ok(t) if t < 0 => Frame::error("ERR timeout is negative"),
        Ok(_) => Frame::Integer(0),
    }
}

fn command_command(_cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let Some(sub) = argv.get(1) else {
        // A short form of Redis's reply: name and arity of each command.
        return Frame::Array(
            ALL.iter()
                .map(|s| {
                    Frame::Array(vec![
                        Frame::Bulk(Bytes::from_static(s.name.as_bytes())),
                        Frame::Integer(i64::from(s.arity)),
                    ])
                })
                .collect(),
        );
    };
    if is(sub, "count") {
        if argv.len() != 2 {
            return wrong_arity("command|count");
        }
        return Frame::Integer(ALL.len() as i64);
    }
    if is(sub, "list") {
        return Frame::Array(
            ALL.iter()
                .map(|s| Frame::Bulk(Bytes::from_static(s.name.as_bytes())))
                .collect(),
        );
    }
    unknown_subcommand("COMMAND", sub)
}
