//! Connection and server commands: the handshake (`HELLO`, `AUTH`, `SELECT`), naming, `PING`,
//! `QUIT`/`RESET`, and what a client may ask about the server (`TIME`, `INFO`; `COMMAND` has its
//! own file, `command_docs.rs`, and `WAIT` is with the replication commands, `replication.rs`).
//!
//! `HELLO 3` switches the connection to RESP3; the engine keeps building the same frames and the
//! encoder (or a front door) decides the bytes.

use super::{
    Args, CONTAINER, CmdResult, Cx, NO_AUTH, NOT_QUEUED, PUBSUB_CONTEXT, Spec, int, is,
    unknown_subcommand, wrong_arity,
};
use crate::engine::{Client, DATABASES, Subscription};
use crate::resp::Frame;
use bytes::Bytes;
use std::fmt::Write;

pub(crate) static PING: Spec = Spec::new("ping", -1, PUBSUB_CONTEXT, ping_command);
pub(crate) static ECHO: Spec = Spec::new("echo", 2, 0, echo_command);
pub(crate) static HELLO: Spec = Spec::new("hello", -1, NO_AUTH, hello_command);
pub(crate) static AUTH: Spec = Spec::new("auth", -2, NO_AUTH, auth_command);
pub(crate) static SELECT: Spec = Spec::new("select", 2, 0, select_command);
pub(crate) static CLIENT: Spec = Spec::new("client", -2, CONTAINER, client_command);
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

fn ping_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
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

fn echo_command(_cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Bulk(args.next_bytes()?.clone()))
}

/// `AUTH password` (the `default` user) or `AUTH user password` (`cmd/acl/`).
fn auth_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let command = Bytes::copy_from_slice(args.name());
    match args.rest() {
        [password] => {
            if cx.engine().acl().users.default_user().nopass {
                return Err(Frame::error(
                    "ERR AUTH <password> called without any password configured for the default \
                     user. Are you sure your configuration is correct?",
                ));
            }
            super::acl::authenticate(cx, &super::DEFAULT_USER, password, &command)?;
        }
        [user, password] => super::acl::authenticate(cx, user, password, &command)?,
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
fn hello_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let command = Bytes::copy_from_slice(args.name());
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
    while let Some(opt) = args.next() {
        let more = args.remaining();
        if is(opt, "auth") && more >= 2 {
            credentials = Some((args.next_bytes()?, args.next_bytes()?));
        } else if is(opt, "setname") && more >= 1 {
            let new_name = args.next_bytes()?;
            valid_client_name(new_name)?;
            // Redis 7.0 names the connection as it reads the option, so the name stays even
            // when a later option or the authentication fails.
            cx.client().name = (!new_name.is_empty()).then(|| new_name.clone());
        } else {
            return Err(super::error_echoing(&[
                b"ERR Syntax error in HELLO option '",
                super::c_text(opt, usize::MAX),
                b"'",
            ]));
        }
    }
    if let Some((user, password)) = credentials {
        super::acl::authenticate(cx, user, password, &command)?;
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
    if let Some(p) = protocol {
        client.protocol = p;
    }
    let proto = client.protocol;
    let role = match cx.engine().is_read_only_replica() {
        true => "replica",
        false => "master",
    };
    let field = |k: &'static str| Frame::Bulk(Bytes::from_static(k.as_bytes()));
    let version = cx.engine().version();
    // Valkey lists its Lua engine as a module.
    let modules = super::cluster::loaded_modules(version);
    let mut fields = vec![
        (field("server"), field(version.server_name())),
        (field("version"), field(version.server_version())),
        (field("proto"), Frame::Integer(i64::from(proto))),
        (field("id"), Frame::Integer(id as i64)),
        (field("mode"), field("standalone")),
        (field("role"), field(role)),
        (field("modules"), Frame::Array(modules)),
    ];
    if cx.engine().is_sentinel() {
        // A sentinel names its mode and has no role to give.
        fields[4].1 = field("sentinel");
        fields.remove(5);
    }
    Ok(Frame::Map(fields))
}

fn select_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let index = i64::from(args.next_i32()?);
    if index != 0 && cx.engine().is_cluster_node() {
        return Err(Frame::error("ERR SELECT is not allowed in cluster mode"));
    }
    if !(0..DATABASES as i64).contains(&index) {
        return Err(Frame::error("ERR DB index is out of range"));
    }
    cx.client().db = index as usize;
    cx.db = index as usize;
    Ok(Frame::OK)
}

/// `CLIENT ID`, `GETNAME`, `SETNAME name`, `INFO`, `LIST`, `KILL`, `NO-EVICT`, `UNBLOCK`,
/// `GETREDIR`, `HELP`; `REPLY`, `PAUSE`, `UNPAUSE` and the tracking subcommands are in
/// `client.rs` (dispatch has checked the subcommand's arity).
fn client_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    if is(sub, "id") {
        return Ok(Frame::Integer(cx.client as i64));
    }
    if is(sub, "getname") {
        return Ok(cx.client().name.clone().map_or(Frame::Null, Frame::Bulk));
    }
    if is(sub, "setname") {
        let name = args.next_bytes()?;
        valid_client_name(name)?;
        cx.client().name = (!name.is_empty()).then(|| name.clone());
        return Ok(Frame::OK);
    }
    if is(sub, "info") {
        let (now, id) = (cx.now, cx.client);
        let outbox = cx.engine().outbox_len(crate::engine::ClientId(id));
        let version = cx.engine().version();
        let line = client_line(now, id, cx.client(), "client|info", (outbox, version));
        return Ok(Frame::text(line));
    }
    if is(sub, "list") {
        return client_list(cx, args);
    }
    if is(sub, "kill") {
        return client_kill(cx, args);
    }
    if is(sub, "no-evict") {
        let on_off = args.next_bytes()?;
        return if is(on_off, "on") || is(on_off, "off") {
            Ok(Frame::OK)
        } else {
            Err(super::SYNTAX)
        };
    }
    if is(sub, "unblock") {
        return super::blocking::client_unblock(cx, sub, args);
    }
    // The subcommands of Redis 7.2 and later: dispatch let them through only where the release
    // has them.
    if is(sub, "setinfo") {
        let option = args.next_bytes()?;
        let value = args.next_bytes()?;
        let slot = if is(option, "lib-name") {
            0
        } else if is(option, "lib-ver") {
            1
        } else {
            return Err(super::error_echoing(&[
                b"ERR Unrecognized option '",
                super::c_text(option, 128),
                b"'",
            ]));
        };
        if !value.iter().all(|b| (b'!'..=b'~').contains(b)) {
            return Err(super::error_echoing(&[
                b"ERR ",
                super::c_text(option, 128),
                b" cannot contain spaces, newlines or special characters.",
            ]));
        }
        cx.client().lib[slot] = (!value.is_empty()).then(|| value.clone());
        return Ok(Frame::OK);
    }
    if is(sub, "no-touch") {
        // Taken and acknowledged; the fake's key access times do not yet tell such a client
        // apart (`differences.md`).
        let on_off = args.next_bytes()?;
        return if is(on_off, "on") || is(on_off, "off") {
            Ok(Frame::OK)
        } else {
            Err(super::SYNTAX)
        };
    }
    // The subcommands that live in `client.rs`, each given the rest of the call.
    type Subcommand = fn(&mut Cx<'_>, &mut Args<'_>) -> CmdResult;
    const IN_CLIENT: &[(&str, Subcommand)] = &[
        ("getredir", super::client::client_getredir),
        ("tracking", super::client::client_tracking),
        ("caching", super::client::client_caching),
        ("trackinginfo", super::client::client_trackinginfo),
        ("reply", super::client::client_reply),
        ("pause", super::client::client_pause),
        ("unpause", super::client::client_unpause),
    ];
    if let Some(&(_, run)) = IN_CLIENT.iter().find(|(word, _)| is(sub, word)) {
        return run(cx, args);
    }
    if is(sub, "help") {
        return Ok(Frame::Array(
            CLIENT_HELP.iter().map(|&l| Frame::simple(l)).collect(),
        ));
    }
    Err(unknown_subcommand("CLIENT", sub))
}

/// One line of `CLIENT LIST` for connection `id`, with every field of the release in its order
/// (7.4 adds `watch`, `lib-name`, `lib-ver`; Valkey also `capa` and the `tot-` counters).
/// `running` is the command the caller runs now (its own line shows it, as in Redis); `outbox`
/// the messages waiting for the connection (`oll`). Buffers and counters the fake does not keep
/// read 0.
pub(super) fn client_line(
    now: i64,
    id: u64,
    c: &Client,
    running: &str,
    (outbox, version): (usize, crate::engine::Version),
) -> String {
    let newer = version != crate::engine::Version::V7_0;
    let valkey = version.is_valkey();
    let capa = if valkey { " capa=" } else { "" };
    let watch = match newer {
        true => format!(" watch={}", c.watch_count()),
        false => String::new(),
    };
    let lib = |i: usize| {
        c.lib[i]
            .as_ref()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    let mut tail = match newer {
        true => format!(" lib-name={} lib-ver={}", lib(0), lib(1)),
        false => String::new(),
    };
    if valkey {
        tail.push_str(" tot-net-in=0 tot-net-out=0 tot-cmds=0");
    }
    let name = c
        .name
        .as_ref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let flags = super::client::client_flags(c);
    format!(
        "id={id} addr=in-process:{id} laddr=in-process:0 fd=-1 name={name} age={} idle={} \
         flags={flags}{capa} db={} sub={} psub={} ssub={} multi={}{watch} qbuf=0 qbuf-free=0 \
         argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll={outbox} omem=0 tot-mem=0 events=r \
         cmd={running} user={} redir={} resp={}{tail}\n",
        (now - c.created_at).max(0) / 1000,
        (now - c.last_command_at).max(0) / 1000,
        c.db,
        c.subscription_count(Subscription::Channel),
        c.subscription_count(Subscription::Pattern),
        c.subscription_count(Subscription::Shard),
        c.multi.as_ref().map_or(-1, |m| m.queue.len() as i64),
        String::from_utf8_lossy(&c.user),
        c.tracking.as_deref().map_or(-1, |t| t.redirect as i64),
        c.protocol,
    )
}

/// A connection's type, as `CLIENT LIST TYPE` and `CLIENT KILL TYPE` name them: the fake has no
/// replicas or masters, so a connection is `pubsub` while subscribed and `normal` otherwise.
fn client_type(c: &Client) -> &'static str {
    if c.is_subscriber() {
        "pubsub"
    } else {
        "normal"
    }
}

/// A `TYPE` argument, checked: `ERR Unknown client type '<type>'` for another word.
fn type_filter(arg: &[u8]) -> Result<&'static str, Frame> {
    ["normal", "master", "replica", "slave", "pubsub"]
        .into_iter()
        .find(|t| is(arg, t))
        .map(|t| if t == "slave" { "replica" } else { t })
        .ok_or_else(|| {
            super::error_echoing(&[b"ERR Unknown client type '", super::c_text(arg, 128), b"'"])
        })
}

/// `CLIENT LIST [TYPE <type>] [ID <id> ...]`.
fn client_list(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut kind = None;
    let mut ids: Option<Vec<u64>> = None;
    if args.eat("type") {
        kind = Some(type_filter(args.next().ok_or(super::SYNTAX)?)?);
    } else if args.eat("id") {
        if args.remaining() == 0 {
            return Err(super::SYNTAX);
        }
        let mut wanted = Vec::new();
        for id in args.by_ref() {
            match int(id) {
                Ok(n) => wanted.push(u64::try_from(n).unwrap_or(0)),
                Err(_) => return Err(Frame::error("ERR Invalid client ID")),
            }
        }
        ids = Some(wanted);
    }
    args.finish()?;
    let (now, me) = (cx.now, cx.client);
    let engine = cx.engine();
    let text: String = engine
        .clients()
        .filter(|(id, c)| {
            kind.is_none_or(|k| client_type(c) == k)
                && ids.as_ref().is_none_or(|ids| ids.contains(id))
        })
        .map(|(id, c)| {
            let running = if id == me {
                "client|list"
            } else {
                c.last_command
            };
            client_line(
                now,
                id,
                c,
                running,
                (
                    engine.outbox_len(crate::engine::ClientId(id)),
                    engine.version(),
                ),
            )
        })
        .collect();
    Ok(Frame::text(text))
}

/// `CLIENT KILL <addr>` (the old form: `OK`, or `ERR No such client`) and `CLIENT KILL <filter>
/// <value> ...` (how many it closed). The caller is spared unless `SKIPME no`.
fn client_kill(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() == 0 {
        return Err(wrong_arity("client|kill"));
    }
    if args.remaining() == 1 {
        let addr = args.next_bytes()?;
        let found = cx
            .engine()
            .clients()
            .find(|(id, _)| addr[..] == *format!("in-process:{id}").as_bytes())
            .map(|(id, _)| id);
        return match found {
            Some(id) => {
                cx.kill_client(id);
                Ok(Frame::OK)
            }
            None => Err(Frame::error("ERR No such client")),
        };
    }
    if !args.remaining().is_multiple_of(2) {
        return Err(super::SYNTAX);
    }
    let (mut id_filter, mut kind, mut addr, mut laddr, mut user) = (None, None, None, None, None);
    let mut skip_me = true;
    // `MAXAGE <seconds>` (Redis 7.4, Valkey): only connections at least that old.
    let mut max_age = None;
    let has_max_age = cx.engine().version() != crate::engine::Version::V7_0;
    while let Some(option) = args.next() {
        let value = args.next_bytes()?;
        if is(option, "id") {
            match int(value) {
                Ok(n) if n > 0 => id_filter = Some(n as u64),
                _ => return Err(Frame::error("ERR client-id should be greater than 0")),
            }
        } else if is(option, "maxage") && has_max_age {
            match int(value) {
                Ok(n) if n > 0 => max_age = Some(n),
                Ok(_) => return Err(Frame::error("ERR maxage should be greater than 0")),
                Err(_) => {
                    return Err(Frame::error("ERR maxage is not an integer or out of range"));
                }
            }
        } else if is(option, "type") {
            kind = Some(type_filter(value)?);
        } else if is(option, "addr") {
            addr = Some(value.clone());
        } else if is(option, "laddr") {
            laddr = Some(value.clone());
        } else if is(option, "user") {
            if cx.engine().acl().users.get(value).is_none() {
                return Err(super::error_echoing(&[
                    b"ERR No such user '",
                    super::c_text(value, 128),
                    b"'",
                ]));
            }
            user = Some(value.clone());
        } else if is(option, "skipme") {
            skip_me = if is(value, "yes") {
                true
            } else if is(value, "no") {
                false
            } else {
                return Err(super::SYNTAX);
            };
        } else {
            return Err(super::SYNTAX);
        }
    }
    let (me, now) = (cx.client, cx.now);
    let doomed: Vec<u64> = cx
        .engine()
        .clients()
        .filter(|(id, c)| {
            id_filter.is_none_or(|f| f == *id)
                && kind.is_none_or(|k| client_type(c) == k)
                && addr
                    .as_ref()
                    .is_none_or(|a| a[..] == *format!("in-process:{id}").as_bytes())
                && laddr.as_ref().is_none_or(|a| &a[..] == b"in-process:0")
                && user.as_ref().is_none_or(|u| *u == c.user)
                && !(skip_me && *id == me)
                // Redis compares whole seconds: the clock's, less the second it connected in.
                && max_age.is_none_or(|age| now.div_euclid(1000) - c.created_at.div_euclid(1000) >= age)
        })
        .map(|(id, _)| id)
        .collect();
    for &id in &doomed {
        cx.kill_client(id);
    }
    Ok(Frame::Integer(doomed.len() as i64))
}

/// `CLIENT HELP`, Redis 7.0's lines.
const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "HELP",
    "    Prints this help.",
];

fn quit_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cx.client().closing = true;
    Ok(Frame::OK)
}

/// `RESET`: the connection as it was when it opened (no transaction, watches, subscriptions or
/// name; database 0; RESP2; the `default` user, unauthenticated if it needs a password).
fn reset_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cx.unwatch();
    let needs_auth = cx.engine().acl().users.auth_required();
    let client = cx.client();
    client.multi = None;
    client.db = 0;
    client.protocol = 2;
    client.name = None;
    client.authenticated = !needs_auth;
    client.user = super::DEFAULT_USER;
    super::client::reset(cx);
    cx.unsubscribe_all();
    cx.db = 0;
    Ok(Frame::simple("RESET"))
}

fn time_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    // Redis reads the wall clock here, in microseconds; never before the command's own time.
    // Redis 7.4 and Valkey give a script the time it started at, all along.
    let frozen = match cx.engine().version() {
        crate::engine::Version::V7_0 => None,
        _ => cx.script_us.filter(|_| cx.in_script()),
    };
    let us = frozen.unwrap_or_else(|| cx.engine().now_us().max(cx.now.saturating_mul(1000)));
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from(us.div_euclid(1_000_000).to_string())),
        Frame::Bulk(Bytes::from(us.rem_euclid(1_000_000).to_string())),
    ]))
}

/// What `INFO memory` says of the scripts' Lua states and what they hold.
#[derive(Default)]
struct ScriptMemory {
    eval_vm: u64,
    cached_scripts: u64,
    eval_overhead: u64,
    functions_vm: u64,
    functions: u64,
    libraries: u64,
    functions_overhead: u64,
}

impl ScriptMemory {
    /// Redis's lines, from `used_memory_lua` to `used_memory_scripts_human`, in its order.
    fn info_lines(&self) -> String {
        let vm_total = self.eval_vm + self.functions_vm;
        let scripts = self.eval_overhead + self.functions_overhead;
        format!(
            "used_memory_lua:{eval}\r\nused_memory_vm_eval:{eval}\r\nused_memory_lua_human:{}\r\n\
             used_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\n\
             number_of_functions:{}\r\nnumber_of_libraries:{}\r\n\
             used_memory_vm_functions:{}\r\nused_memory_vm_total:{vm_total}\r\n\
             used_memory_vm_total_human:{}\r\nused_memory_functions:{}\r\n\
             used_memory_scripts:{scripts}\r\nused_memory_scripts_human:{}\r\n",
            human_bytes(self.eval_vm),
            self.eval_overhead,
            self.cached_scripts,
            self.functions,
            self.libraries,
            self.functions_vm,
            human_bytes(vm_total),
            self.functions_overhead,
            human_bytes(scripts),
            eval = self.eval_vm,
        )
    }
}

/// The scripts' part of `INFO memory`: the Lua runner's figures, or without it (no Lua state
/// ever starts) Redis 7.4's fresh states beside the native scripts.
fn script_memory(cx: &mut Cx<'_>) -> ScriptMemory {
    #[cfg(feature = "lua")]
    {
        let m = crate::lua::memory(cx);
        ScriptMemory {
            eval_vm: m.eval_vm,
            cached_scripts: m.cached_scripts,
            eval_overhead: m.eval_overhead,
            functions_vm: m.functions_vm,
            functions: m.functions,
            libraries: m.libraries,
            functions_overhead: m.functions_overhead,
        }
    }
    #[cfg(not(feature = "lua"))]
    {
        let cached_scripts = cx.scripts().native_bodies().len() as u64;
        ScriptMemory {
            eval_vm: 31_744,
            cached_scripts,
            functions_vm: 32_768,
            functions_overhead: 232,
            ..ScriptMemory::default()
        }
    }
}

/// Redis's `bytesToHuman`, as `INFO` prints `maxmemory_human`: `0B`, `1.50K`, `2.00M`, ...
pub(super) fn human_bytes(n: u64) -> String {
    let n = n as f64;
    let units = [("K", 1024.0), ("M", 1048576.0), ("G", 1073741824.0)];
    if n < 1024.0 {
        return format!("{n}B");
    }
    let (unit, size) = units
        .iter()
        .rev()
        .find(|(_, size)| n >= *size)
        .copied()
        .unwrap_or(units[0]);
    format!("{:.2}{unit}", n / size)
}

/// `INFO [section…]` as Redis 7.0 and 7.4 print it; Valkey's layout is `info_valkey.rs`'s.
fn info_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let wanted: Vec<String> = args
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    if cx.engine().version().is_valkey() {
        return super::info_valkey::info(cx, &wanted);
    }
    // `all` and `everything` are every section; the default leaves out the per-command ones.
    let all = wanted.iter().any(|w| w == "all" || w == "everything");
    let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
    let want = |s: &str| {
        all || (default && !matches!(s, "commandstats" | "latencystats"))
            || wanted.iter().any(|w| w == s)
    };
    let now = cx.now;
    // The memory estimate (`engine/memory.rs`), measured before the engine is only read.
    let used_memory = match want("memory") {
        true => cx.node().used_memory(),
        false => 0,
    };
    let scripts = match want("memory") {
        true => script_memory(cx),
        false => ScriptMemory::default(),
    };
    let engine = cx.engine();
    let mut sections = Vec::new();
    if want("server") {
        let uptime = (now - engine.started_at()).max(0) / 1000;
        let version = engine.version();
        let mut s = String::from("# Server\r\n");
        let _ = write!(
            s,
            "redis_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n\
             redis_build_id:0\r\nredis_mode:standalone\r\nos:fake-redis (in-process)\r\n\
             arch_bits:64\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\n\
             gcc_version:0.0.0\r\nprocess_id:1\r\nprocess_supervised:no\r\n\
             run_id:{:040x}\r\ntcp_port:6379\r\n\
             server_time_usec:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\n\
             hz:10\r\nconfigured_hz:10\r\nlru_clock:{}\r\nexecutable:\r\n\
             config_file:\r\nio_threads_active:0\r\n",
            version.redis_version(),
            engine.started_at(),
            now.saturating_mul(1000),
            uptime / 86_400,
            (now / 1000) & ((1 << 24) - 1)
        );
        // Redis 7.2 and later list the listeners.
        if version != crate::engine::Version::V7_0 {
            s.push_str("listener0:name=tcp,bind=127.0.0.1,port=6379\r\n");
        }
        sections.push(s);
    }
    if want("clients") {
        let mut s = String::from("# Clients\r\n");
        let _ = write!(
            s,
            "connected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\n\
             blocked_clients:{}\r\ntracking_clients:{}\r\n",
            engine.client_count(),
            engine.client_limit().maxclients(),
            engine.blocked_clients(),
            engine.tracking_clients()
        );
        // Redis 7.2 and later count the keys blocked clients wait on.
        if engine.version() != crate::engine::Version::V7_0 {
            let (blocking, on_nokey) = engine.blocking_keys();
            let _ = write!(
                s,
                "total_blocking_keys:{blocking}\r\ntotal_blocking_keys_on_nokey:{on_nokey}\r\n"
            );
        }
        sections.push(s);
    }
    if want("memory") {
        // The fake keeps no allocator statistics: its estimate of what Redis would allocate
        // (`engine/memory.rs`), the figure `maxmemory` is held to.
        let used = used_memory;
        let startup = crate::engine::memory::STARTUP;
        let maxmemory = engine.maxmemory();
        let policy = engine
            .config()
            .settings
            .get("maxmemory-policy")
            .map_or("noeviction", String::as_str);
        let mut s = String::from("# Memory\r\n");
        let _ = write!(
            s,
            "used_memory:{used}\r\nused_memory_human:{:.2}M\r\nused_memory_rss:{used}\r\n\
             used_memory_rss_human:{:.2}M\r\nused_memory_peak:{used}\r\n\
             used_memory_peak_human:{:.2}M\r\nused_memory_peak_perc:100.00%\r\n\
             used_memory_overhead:{startup}\r\nused_memory_startup:{startup}\r\n\
             used_memory_dataset:{}\r\n{}maxmemory:{maxmemory}\r\nmaxmemory_human:{}\r\n\
             maxmemory_policy:{policy}\r\nmem_fragmentation_ratio:1.00\r\n\
             mem_fragmentation_bytes:0\r\nmem_not_counted_for_evict:0\r\n\
             mem_allocator:libc\r\nlazyfree_pending_objects:0\r\nlazyfreed_objects:{}\r\n",
            used as f64 / 1048576.0,
            used as f64 / 1048576.0,
            used as f64 / 1048576.0,
            used - startup,
            scripts.info_lines(),
            human_bytes(maxmemory),
            engine.stats().lazyfreed,
        );
        sections.push(s);
    }
    if want("persistence") {
        let mut s = String::from("# Persistence\r\n");
        let _ = write!(
            s,
            "loading:0\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\n\
             current_fork_perc:0.00\r\ncurrent_save_keys_processed:0\r\n\
             current_save_keys_total:0\r\nrdb_changes_since_last_save:0\r\n\
             rdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\n\
             rdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:-1\r\n\
             rdb_current_bgsave_time_sec:-1\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n\
             aof_rewrite_scheduled:0\r\naof_last_rewrite_time_sec:-1\r\n\
             aof_current_rewrite_time_sec:-1\r\naof_last_bgrewrite_status:ok\r\n\
             aof_rewrites:0\r\naof_last_write_status:ok\r\nmodule_fork_in_progress:0\r\n\
             module_fork_last_cow_size:0\r\n",
            engine.started_at() / 1000
        );
        sections.push(s);
    }
    if want("stats") {
        let expired: u64 = engine.dbs().iter().map(|d| d.stats.expired_keys).sum();
        let evicted: u64 = engine.dbs().iter().map(|d| d.stats.evicted_keys).sum();
        let (tracked_keys, tracked_items, tracked_prefixes) = engine.tracking_totals();
        let mut s = String::from("# Stats\r\n");
        let _ = write!(
            s,
            "total_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             instantaneous_ops_per_sec:{}\r\nrejected_connections:{}\r\nexpired_keys:{expired}\r\n\
             expired_stale_perc:{:.2}\r\nexpired_time_cap_reached_count:{}\r\n\
             expire_cycle_cpu_milliseconds:0\r\nevicted_keys:{evicted}\r\n\
             evicted_clients:0\r\ntotal_eviction_exceeded_time:0\r\n\
             current_eviction_exceeded_time:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\n\
             pubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\n\
             tracking_total_keys:{tracked_keys}\r\ntracking_total_items:{tracked_items}\r\n\
             tracking_total_prefixes:{tracked_prefixes}\r\n\
             unexpected_error_replies:0\r\ntotal_error_replies:{}\r\n",
            engine.stats().connections,
            engine.stats().commands,
            engine.stats().ops.per_second(),
            engine.client_limit().rejected(),
            engine.expiry_stats().0 * 100.0,
            engine.expiry_stats().1,
            engine.stats().keyspace_hits,
            engine.stats().keyspace_misses,
            engine.channel_count(),
            engine.pattern_count(),
            engine.shard_channel_count(),
            engine.stats().error_replies,
        );
        sections.push(s);
    }
    if want("replication") {
        sections.push(engine.replication_info(false));
    }
    if want("cpu") {
        sections.push(
            "# CPU\r\nused_cpu_sys:0.000000\r\nused_cpu_user:0.000000\r\n\
             used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n\
             used_cpu_sys_main_thread:0.000000\r\nused_cpu_user_main_thread:0.000000\r\n"
                .to_owned(),
        );
    }
    if want("modules") {
        sections.push("# Modules\r\n".to_owned());
    }
    if want("commandstats") {
        sections.push(engine.stats().commandstats_section());
    }
    if want("errorstats") {
        sections.push(engine.stats().errorstats_section());
    }
    if want("latencystats") {
        sections.push(super::server::latencystats_section(engine));
    }
    if want("cluster") {
        // Client test suites (redis-py's conftest) read `cluster_enabled` before their first test
        // to choose between a standalone client and a cluster one.
        let enabled = u8::from(engine.is_cluster_node());
        sections.push(format!("# Cluster\r\ncluster_enabled:{enabled}\r\n"));
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
