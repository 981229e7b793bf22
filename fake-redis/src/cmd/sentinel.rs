//! The commands a Sentinel answers (`redis-sentinel` 7.0.15's table), over the sentinel's state
//! (`engine/sentinel.rs`).
//!
//! A sentinel knows fifteen commands. Ten are a server's own (`AUTH`, `HELLO`, `CLIENT`, `PING`,
//! the pub/sub ones, `ACL`, `SHUTDOWN`) and run the engine's handlers, so their replies and errors
//! are Redis's already; `HELLO` says `mode sentinel` (and no role). The others are the sentinel's:
//! `SENTINEL` and its subcommands, `ROLE`, `INFO` with its `# Sentinel` section, `PUBLISH` (which
//! a sentinel takes only on its hello channel) and `COMMAND COUNT`/`LIST`. Every other name is
//! an unknown command, `GET` and `QUIT` included, with Redis's text.
//!
//! The subcommands a client uses to find and follow a primary are served in full; those that
//! reconfigure a sentinel or read its internals (`MONITOR`, `SET`, `CONFIG`, `DEBUG`, …) are
//! known, arity-checked as Redis checks them, and refused with an error that says so.

use super::{Args, CmdResult, Cx, Spec, is, unknown_subcommand, wrong_arity};
use crate::engine::sentinel::{FailoverRefused, Sentinel};
use crate::resp::Frame;
use bytes::Bytes;

static SENTINEL: Spec = Spec::new("sentinel", -2, 0, sentinel_command);
static ROLE: Spec = Spec::new("role", 1, 0, role_command);
static INFO: Spec = Spec::new("info", -1, 0, info_command);
static PUBLISH: Spec = Spec::new("publish", 3, 0, publish_command);
static COMMAND: Spec = Spec::new("command", -1, 0, command_command);

/// A sentinel's commands by name, in `COMMAND LIST`'s terms.
static TABLE: &[(&str, &Spec)] = &[
    ("acl", &super::acl::ACL),
    ("auth", &super::connection::AUTH),
    ("client", &super::connection::CLIENT),
    ("command", &COMMAND),
    ("hello", &super::connection::HELLO),
    ("info", &INFO),
    ("ping", &super::connection::PING),
    ("psubscribe", &super::pubsub::PSUBSCRIBE),
    ("publish", &PUBLISH),
    ("punsubscribe", &super::pubsub::PUNSUBSCRIBE),
    ("role", &ROLE),
    ("sentinel", &SENTINEL),
    ("shutdown", &super::server::SHUTDOWN),
    ("subscribe", &super::pubsub::SUBSCRIBE),
    ("unsubscribe", &super::pubsub::UNSUBSCRIBE),
];

/// The command a sentinel knows by `name` (any case).
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    let found = TABLE
        .iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name));
    found.map(|&(_, spec)| spec)
}

/// `SENTINEL`'s subcommands with Redis's arities (counting `SENTINEL` and the subcommand).
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("ckquorum", 3),
    ("config", -3),
    ("debug", -2),
    ("failover", 3),
    ("flushconfig", 2),
    ("get-master-addr-by-name", 3),
    ("help", 2),
    ("info-cache", -3),
    ("is-master-down-by-addr", 6),
    ("master", 3),
    ("masters", 2),
    ("monitor", 6),
    ("myid", 2),
    ("pending-scripts", 2),
    ("remove", 3),
    ("replicas", 3),
    ("reset", 3),
    ("sentinels", 3),
    ("set", -5),
    ("simulate-failure", -3),
    ("slaves", 3),
];

const NO_SUCH_MASTER: Frame = Frame::error("ERR No such master with that name");

fn state<'c>(cx: &'c Cx<'_>) -> &'c Sentinel {
    cx.engine()
        .sentinel
        .as_deref()
        .expect("the sentinel's table runs only on a sentinel")
}

fn state_mut<'c>(cx: &'c mut Cx<'_>) -> &'c mut Sentinel {
    cx.node()
        .sentinel
        .as_deref_mut()
        .expect("the sentinel's table runs only on a sentinel")
}

/// `SENTINEL <subcommand> …` (see the [module docs](self)).
fn sentinel_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let Some(&(name, arity)) = SUBCOMMANDS.iter().find(|(n, _)| is(sub, n)) else {
        return Err(unknown_subcommand("SENTINEL", sub));
    };
    if !super::arity_allows(arity, args.remaining() + 2) {
        return Err(wrong_arity(&format!("sentinel|{name}")));
    }
    // The subcommands that name a master check it first.
    let named = |cx: &Cx<'_>, args: &mut Args<'_>| -> Result<(), Frame> {
        let master = args.next_bytes()?;
        if state(cx).watches(master) {
            Ok(())
        } else {
            Err(NO_SUCH_MASTER)
        }
    };
    let now = cx.now;
    match name {
        "get-master-addr-by-name" => match named(cx, args) {
            Ok(()) => Ok(state(cx).primary_addr()),
            Err(_) => Ok(Frame::NullArray),
        },
        "masters" => {
            state_mut(cx).observe();
            Ok(Frame::Array(vec![state(cx).master_fields(now)]))
        }
        "master" => {
            named(cx, args)?;
            state_mut(cx).observe();
            Ok(state(cx).master_fields(now))
        }
        "replicas" | "slaves" => {
            named(cx, args)?;
            state_mut(cx).observe();
            Ok(state(cx).replica_fields(now))
        }
        "sentinels" => {
            // The fake runs one sentinel: it knows no other.
            named(cx, args)?;
            Ok(Frame::Array(Vec::new()))
        }
        "myid" => Ok(Frame::Bulk(Bytes::from(state(cx).myid().to_owned()))),
        "ckquorum" => {
            named(cx, args)?;
            Ok(Frame::simple(
                "OK 1 usable Sentinels. Quorum and failover authorization can be reached",
            ))
        }
        "failover" => {
            named(cx, args)?;
            failover(cx, now)
        }
        "help" => Ok(Frame::Array(
            HELP_LINES.iter().map(|&l| Frame::simple(l)).collect(),
        )),
        _ => Err(Frame::error_owned(format!(
            "ERR fake-redis's Sentinel does not serve SENTINEL {}: it watches one fixed \
             topology (see the README, \"fake-redis-server\")",
            name.to_ascii_uppercase()
        ))),
    }
}

/// `SENTINEL failover <name>`: the switch, then its events on the sentinel's channels.
fn failover(cx: &mut Cx<'_>, now: i64) -> CmdResult {
    let events = match state_mut(cx).failover(now) {
        Ok(events) => events,
        Err(FailoverRefused::NoGoodReplica) => {
            return Err(Frame::error("NOGOODSLAVE No suitable replica to promote"));
        }
        Err(FailoverRefused::Busy(port)) => {
            return Err(Frame::error_owned(format!(
                "BUSY the node on port {port} is running a script; SENTINEL FAILOVER once it ends"
            )));
        }
    };
    let engine = cx.node();
    for (channel, message) in events {
        engine.publish(channel.as_bytes(), message.as_bytes(), now);
    }
    Ok(Frame::OK)
}

/// `ROLE` on a sentinel: `sentinel` and the names of the masters it watches.
fn role_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let name = Bytes::from(state(cx).master_name().to_owned());
    Ok(Frame::Array(vec![
        Frame::Bulk(Bytes::from_static(b"sentinel")),
        Frame::Array(vec![Frame::Bulk(name)]),
    ]))
}

/// `INFO [section …]` on a sentinel: the server's sections a sentinel keeps (`server`,
/// `clients`, `stats`, `cpu`, from the engine's `INFO`) and its own `# Sentinel`.
fn info_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let wanted: Vec<String> = args
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    let every = wanted.is_empty()
        || (wanted.iter()).any(|w| matches!(w.as_str(), "all" | "everything" | "default"));
    let want = |s: &str| every || wanted.iter().any(|w| w == s);
    let mut argv = vec![Bytes::from_static(b"info")];
    for section in ["server", "clients", "stats", "cpu"] {
        if want(section) {
            argv.push(Bytes::from_static(section.as_bytes()));
        }
    }
    let mut sections = Vec::new();
    if argv.len() > 1 {
        let reply = (super::connection::INFO.run)(cx, &mut Args::new(&argv))?;
        if let Frame::Bulk(text) | Frame::Verbatim { text, .. } = reply {
            let text = String::from_utf8_lossy(&text)
                .replace("redis_mode:standalone", "redis_mode:sentinel");
            sections.push(text);
        }
    }
    if want("sentinel") {
        sections.push(state(cx).info_section());
    }
    // A bulk string in RESP3 too: a sentinel's `INFO` is not a verbatim string, a server's is.
    Ok(Frame::Bulk(Bytes::from(sections.join("\r\n"))))
}

/// `PUBLISH`: a sentinel takes only other sentinels' hellos (which the fake, alone, has no use
/// for).
fn publish_command(_cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let channel = args.next_bytes()?;
    if channel.as_ref() == b"__sentinel__:hello" {
        return Ok(Frame::Integer(1));
    }
    Err(Frame::error(
        "ERR Only HELLO messages are accepted by Sentinel instances.",
    ))
}

/// `COMMAND COUNT` and `COMMAND LIST` from the sentinel's table; the other subcommands describe
/// commands as a server's `COMMAND` does.
fn command_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.peek() {
        Some(sub) if is(sub, "count") && args.remaining() == 1 => {
            Ok(Frame::Integer(TABLE.len() as i64))
        }
        Some(sub) if is(sub, "list") && args.remaining() == 1 => {
            let mut names: Vec<Frame> = Vec::new();
            for &(name, _) in TABLE {
                names.push(Frame::Bulk(Bytes::from_static(name.as_bytes())));
                if name == "sentinel" {
                    for &(sub, _) in SUBCOMMANDS {
                        names.push(Frame::Bulk(Bytes::from(format!("sentinel|{sub}"))));
                    }
                }
            }
            Ok(Frame::Array(names))
        }
        _ => (super::command_docs::COMMAND.run)(cx, args),
    }
}

/// The lines of `SENTINEL HELP`, as `redis-sentinel` 7.0.15 prints them.
const HELP_LINES: &[&str] = &[
    "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CKQUORUM <master-name>",
    "    Check if the current Sentinel configuration is able to reach the quorum",
    "    needed to failover a master and the majority needed to authorize the",
    "    failover.",
    "CONFIG SET <param> <value>",
    "    Set a global Sentinel configuration parameter.",
    "CONFIG GET <param>",
    "    Get global Sentinel configuration parameter.",
    "DEBUG [<param> <value> ...]",
    "    Show a list of configurable time parameters and their values (milliseconds).",
    "    Or update current configurable parameters values (one or more).",
    "GET-MASTER-ADDR-BY-NAME <master-name>",
    "    Return the ip and port number of the master with that name.",
    "FAILOVER <master-name>",
    "    Manually failover a master node without asking for agreement from other",
    "    Sentinels",
    "FLUSHCONFIG",
    "    Force Sentinel to rewrite its configuration on disk, including the current",
    "    Sentinel state.",
    "INFO-CACHE <master-name>",
    "    Return last cached INFO output from masters and all its replicas.",
    "IS-MASTER-DOWN-BY-ADDR <ip> <port> <current-epoch> <runid>",
    "    Check if the master specified by ip:port is down from current Sentinel's",
    "    point of view.",
    "MASTER <master-name>",
    "    Show the state and info of the specified master.",
    "MASTERS",
    "    Show a list of monitored masters and their state.",
    "MONITOR <name> <ip> <port> <quorum>",
    "    Start monitoring a new master with the specified name, ip, port and quorum.",
    "MYID",
    "    Return the ID of the Sentinel instance.",
    "PENDING-SCRIPTS",
    "    Get pending scripts information.",
    "REMOVE <master-name>",
    "    Remove master from Sentinel's monitor list.",
    "REPLICAS <master-name>",
    "    Show a list of replicas for this master and their state.",
    "RESET <pattern>",
    "    Reset masters for specific master name matching this pattern.",
    "SENTINELS <master-name>",
    "    Show a list of Sentinel instances for this master and their state.",
    "SET <master-name> <option> <value> [<option> <value> ...]",
    "    Set configuration parameters for certain masters.",
    "SIMULATE-FAILURE [CRASH-AFTER-ELECTION] [CRASH-AFTER-PROMOTION] [HELP]",
    "    Simulate a Sentinel crash.",
    "HELP",
    "    Prints this help.",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::NO_AUTH;

    #[test]
    fn the_table_is_redis_sentinel_s_fifteen_commands() {
        assert_eq!(TABLE.len(), 15);
        assert!(lookup(b"Sentinel").is_some());
        assert!(lookup(b"get").is_none());
        assert!(lookup(b"quit").is_none());
    }

    #[test]
    fn help_has_redis_sentinel_s_49_lines() {
        assert_eq!(HELP_LINES.len(), 49);
    }

    #[test]
    fn no_auth_commands_keep_their_flags() {
        assert!(lookup(b"hello").is_some_and(|s| s.has(NO_AUTH)));
    }
}
