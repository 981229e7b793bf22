//! The `HELP` texts of Valkey 9.1, where they differ from Redis 7.0's, which the fake's
//! handlers print: a Valkey server's reply to `X HELP` is its Redis 7.0 text adapted here, after
//! the handler ran (`dispatch.rs`), so each handler keeps one table.
//!
//! Every Valkey help ends `Print this help.` where Redis 7.0's says `Prints this help.`;
//! `COMMAND HELP` no longer says "Redis"; `ACL HELP` speaks of rules where Redis speaks of
//! attributes; `FUNCTION HELP` lists no library description; `CLIENT HELP` and `SCRIPT HELP`
//! describe Valkey's own subcommands and filters, and are Valkey's whole texts. Each text was
//! compared with valkey-server 9.1.2's `X HELP`.

use crate::resp::Frame;
use std::borrow::Cow;

/// `reply`, the Redis 7.0 help of the subcommand `full_name` (`config|help`), as Valkey 9.1
/// prints it; any other reply (an error) as it is.
pub(crate) fn adapt(full_name: &str, reply: Frame) -> Frame {
    let Frame::Array(lines) = reply else {
        return reply;
    };
    match full_name {
        "client|help" => return lines_of(CLIENT_HELP),
        "script|help" => return lines_of(SCRIPT_HELP),
        _ => {}
    }
    let lines = lines
        .into_iter()
        .filter(|l| !(full_name == "function|help" && text(l) == "    * Library description"))
        .map(|l| match l {
            Frame::Simple(s) => Frame::Simple(adapt_line(full_name, s)),
            other => other,
        })
        .collect();
    Frame::Array(lines)
}

fn text(frame: &Frame) -> &str {
    match frame {
        Frame::Simple(s) => s,
        _ => "",
    }
}

fn adapt_line(full_name: &str, line: Cow<'static, str>) -> Cow<'static, str> {
    match &*line {
        "    Prints this help." => Cow::Borrowed("    Print this help."),
        "SETUSER <username> <attribute> [<attribute> ...]" if full_name == "acl|help" => {
            Cow::Borrowed("SETUSER <username> <rule> [<rule> ...]")
        }
        "    Create or modify a user with the specified attributes." if full_name == "acl|help" => {
            Cow::Borrowed("    Create or modify a user with the specified rules.")
        }
        l if full_name == "command|help" && l.contains("Redis ") => {
            Cow::Owned(l.replace("Redis ", ""))
        }
        _ => line,
    }
}

fn lines_of(lines: &[&'static str]) -> Frame {
    Frame::Array(lines.iter().map(|&l| Frame::simple(l)).collect())
}

/// `CLIENT HELP`'s lines, as valkey-server 9.1.2 prints them.
const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "CAPA <option> [options...]",
    "    The client claims its some capability options. Options are:",
    "    * REDIRECT",
    "      The client can handle redirection during primary and replica failover in standalone mode.",
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
    "      Kill connections made from the specified address.",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to the specified local address.",
    "    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id> [<client-id>...]",
    "      Kill connections by client IDs.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "    * FLAGS <flags>",
    "      Kill connections that include the specified flags.",
    "    * NAME <client-name>",
    "      Kill connections with the specified name.",
    "    * IDLE <idle>",
    "      Kill connections with idle time greater than or equal to <idle> seconds.",
    "    * LIB-NAME <library-name>",
    "      Kill connections with the specified library name.",
    "    * LIB-VER <library-version>",
    "      Kill connections with the specified library version.",
    "    * DB <db-id>",
    "      Kill connections currently operating on the specified database ID.",
    "    * CAPA <capa>",
    "      Kill connections currently with the specified capa.",
    "    * IP <ip>",
    "      Kill connections made from the specified ip.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "    * USER <username>",
    "      Return clients authenticated by <username>.",
    "    * ADDR <ip:port>",
    "      Return clients connected from the specified address.",
    "    * LADDR <ip:port>",
    "      Return clients connected to the specified local address.",
    "    * ID <client-id> [<client-id>...]",
    "      Return clients with the specified IDs.",
    "    * SKIPME (YES|NO)",
    "      Exclude the current client from the list (default: no).",
    "    * MAXAGE <maxage>",
    "      List connections older than the specified age.",
    "    * FLAGS <flags>",
    "      Return clients with the specified flags.",
    "    * NAME <client-name>",
    "      Return clients with the specified name.",
    "    * IDLE <idle>",
    "      Return clients with idle time greater than or equal to <idle> seconds.",
    "    * LIB-NAME <lib-name>",
    "      Return clients with the specified lib name.",
    "    * LIB-VER <lib-version>",
    "      Return clients with the specified lib version.",
    "    * DB <db-id>",
    "      Return clients currently operating on the specified database ID.",
    "    * CAPA <capa>",
    "      Return connections currently with the specified capa.",
    "    * IP <ip>",
    "      Return connections made from the specified ip.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "IMPORT-SOURCE (ON|OFF)",
    "    Mark this connection as an import source if import-mode is enabled.",
    "    Sync tools can set their connections into 'import-source' state to visit",
    "    expired keys.",
    "HELP",
    "    Print this help.",
];

/// `SCRIPT HELP`'s lines, as valkey-server 9.1.2 prints them.
const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO) [<engine_name>]",
    "    Set the debug mode for subsequent scripts executed of the specified engine.",
    "    Default engine name: 'lua'",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined",
    "     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "SHOW <sha1>",
    "    Show a script from the scripts cache.",
    "HELP",
    "    Print this help.",
];
