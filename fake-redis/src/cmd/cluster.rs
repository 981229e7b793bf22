//! The commands a standalone Redis 7.0 answers only to say what it is not: a cluster node
//! (`CLUSTER`, `READONLY`, `READWRITE`, `ASKING`), a module host (`MODULE`), and the debugging
//! and self-test commands of HyperLogLog (`PFDEBUG`, `PFSELFTEST`), plus `LOLWUT`, and Valkey
//! 9.1's `CLUSTERSCAN`.
//!
//! On a node of a [`Cluster`](crate::Cluster) the cluster commands are answered instead
//! (`cluster_mode.rs`, and the redirections in `redirect.rs`).
//!
//! Clients probe these at connect (cluster-aware clients send `CLUSTER INFO` or `READONLY` to
//! learn the topology; test suites list modules), so the fake answers each with the reply, or
//! the error, a standalone `redis-server` with its default configuration gives: cluster support
//! disabled, no modules and `MODULE LOAD` refused because `enable-module-command` is `no`.
//! Unknown subcommands and wrong arities are refused first, through the subcommand table of
//! `COMMAND`, as Redis's command lookup refuses them before the command runs.
//!
//! `LOLWUT` answers Redis's version line exactly. Its versions 5 and 6 also draw a picture from
//! Redis's unseeded C `rand()`, which no run of Redis repeats; the fake sends their captions
//! and version line without the picture.

use super::hyperloglog;
use super::server::{help_reply, subcommand};
use super::{Args, CONTAINER, CmdResult, Cx, Spec, WRITE, int};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static CLUSTER: Spec = Spec::new("cluster", -2, CONTAINER, cluster_command);
pub(crate) static READONLY: Spec = Spec::new("readonly", 1, 0, readonly_command);
pub(crate) static READWRITE: Spec = Spec::new("readwrite", 1, 0, readwrite_command);
pub(crate) static ASKING: Spec = Spec::new("asking", 1, 0, asking_command);
pub(crate) static MODULE: Spec = Spec::new("module", -2, CONTAINER, module_command);
pub(crate) static PFDEBUG: Spec =
    Spec::new("pfdebug", 3, WRITE, pfdebug_command).with_reads(super::ReadRule::Never);
pub(crate) static PFSELFTEST: Spec = Spec::new("pfselftest", 1, 0, pfselftest_command);
/// Valkey 9.1's `CLUSTERSCAN cursor [MATCH p] [COUNT n] [TYPE t] [SLOT s]`.
pub(crate) static CLUSTERSCAN: Spec = Spec::new("clusterscan", -2, 0, clusterscan_command);
pub(crate) static LOLWUT: Spec = Spec::new("lolwut", -1, 0, lolwut_command);

const CLUSTER_DISABLED: Frame = Frame::error("ERR This instance has cluster support disabled");

/// Every subcommand of Redis 7.0's `CLUSTER`: each answers that cluster support is disabled.
const CLUSTER_SUBCOMMANDS: &[&str] = &[
    "addslots",
    "addslotsrange",
    "bumpepoch",
    "count-failure-reports",
    "countkeysinslot",
    "delslots",
    "delslotsrange",
    "failover",
    "flushslots",
    "forget",
    "getkeysinslot",
    "help",
    "info",
    "keyslot",
    "links",
    "meet",
    "myid",
    "nodes",
    "replicas",
    "replicate",
    "reset",
    "saveconfig",
    "set-config-epoch",
    "setslot",
    "shards",
    "slaves",
    "slots",
];

/// `CLUSTER <subcommand>`: refused, even `HELP`, as Redis's `clusterCommand` refuses everything
/// when `cluster-enabled` is `no`.
fn cluster_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let sub = subcommand("CLUSTER", CLUSTER_SUBCOMMANDS, sub)?;
    if cx.engine().is_cluster_node() {
        return super::cluster_mode::cluster_command(cx, sub, args);
    }
    Err(CLUSTER_DISABLED)
}

/// `CLUSTERSCAN` (Valkey 9.1): a standalone server refuses it, as Valkey does with
/// `cluster-enabled no`. A cluster node of the fake does not scan the cluster: its cursors name
/// Valkey's node and slot, which the fake does not imitate, so it says so.
fn clusterscan_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    match cx.engine().is_cluster_node() {
        true => Err(Frame::error(
            "ERR CLUSTERSCAN is not supported by the fake on a cluster node",
        )),
        false => Err(CLUSTER_DISABLED),
    }
}

/// `READONLY`: on a cluster node, the client's reads may be served by a replica.
fn readonly_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    set_client_flag(cx, |c| c.set_cluster_readonly(true))
}

/// `READWRITE`: back to reads redirected to the primary.
fn readwrite_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    set_client_flag(cx, |c| c.set_cluster_readonly(false))
}

/// `ASKING`: the next call may be served by a slot's importing node.
fn asking_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    set_client_flag(cx, |c| c.set_asking(true))
}

/// Only a cluster node takes `READONLY`, `READWRITE` and `ASKING`.
fn set_client_flag(cx: &mut Cx<'_>, set: impl FnOnce(&mut crate::engine::Client)) -> CmdResult {
    if !cx.engine().is_cluster_node() {
        return Err(CLUSTER_DISABLED);
    }
    let id = cx.client;
    if let Some(client) = cx.node().client_mut(id) {
        set(client);
    }
    Ok(Frame::OK)
}

const MODULE_HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

/// The modules a server of `version` has loaded, as `MODULE LIST` and `HELLO` describe them:
/// none on Redis; Valkey 9.1 runs Lua as a module of its own.
pub(crate) fn loaded_modules(version: crate::engine::Version) -> Vec<Frame> {
    if !version.is_valkey() {
        return Vec::new();
    }
    let field = |k: &'static str| Frame::Bulk(Bytes::from_static(k.as_bytes()));
    vec![Frame::Map(vec![
        (field("name"), field("lua")),
        (field("ver"), Frame::Integer(1)),
        (field("path"), field("lua")),
        (field("args"), Frame::Array(Vec::new())),
    ])]
}

/// `MODULE LIST` (Valkey's Lua, or nothing), `MODULE HELP`, and `LOAD`, `LOADEX`, `UNLOAD`,
/// which Redis refuses while `enable-module-command` is `no`, its default.
fn module_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let version = cx.engine().version();
    match subcommand("MODULE", &["list", "help", "load", "loadex", "unload"], sub)? {
        "list" => Ok(Frame::Array(loaded_modules(version))),
        "help" if version.is_valkey() => {
            // Valkey says "Print this help." where Redis says "Prints".
            let mut lines = MODULE_HELP.to_vec();
            lines.pop();
            lines.push("    Print this help.");
            Ok(help_reply(&lines))
        }
        "help" => Ok(help_reply(MODULE_HELP)),
        _ => Err(Frame::error(
            "ERR MODULE command not allowed. If the enable-module-command option is set to \
             \"local\", you can run it from a local connection, otherwise you need to set this \
             option in the configuration file, and then restart the server.",
        )),
    }
}

/// `PFSELFTEST`: Redis checks its register macros and estimator against random registers; the
/// fake's are checked by its tests, so it reports success as Redis does.
fn pfselftest_command(_cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::OK)
}

/// `PFDEBUG GETREG|DECODE|ENCODING|TODENSE key`, as Redis's `pfdebugCommand`: the key is
/// checked first (missing, not a HyperLogLog), then the subcommand; `GETREG` and `TODENSE`
/// rewrite a sparse value dense.
fn pfdebug_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (sub, key) = (args.next_bytes()?, args.next_bytes()?);
    let Some(hll) = hyperloglog::read_unshared(cx, key)? else {
        return Err(Frame::error("ERR The specified key does not exist"));
    };
    // Byte 4 of the header is the encoding: 1 sparse, 0 dense.
    let sparse = hll[4] == 1;
    if super::is(sub, "getreg") || super::is(sub, "todense") {
        let mut hll = hll.to_vec();
        if sparse {
            if !hyperloglog::to_dense(&mut hll) {
                return Err(hyperloglog::INVALID_HLL);
            }
            hyperloglog::store(cx, key, hll.clone());
        }
        if super::is(sub, "todense") {
            return Ok(Frame::Integer(i64::from(sparse)));
        }
        let registers = hyperloglog::registers(&hll).unwrap_or_default();
        Ok(Frame::Array(
            registers
                .into_iter()
                .map(|r| Frame::Integer(i64::from(r)))
                .collect(),
        ))
    } else if super::is(sub, "decode") {
        if !sparse {
            return Err(Frame::error("ERR HLL encoding is not sparse"));
        }
        Ok(Frame::Bulk(Bytes::from(decode_sparse(&hll[16..]))))
    } else if super::is(sub, "encoding") {
        Ok(Frame::simple(if sparse { "sparse" } else { "dense" }))
    } else {
        Err(super::error_echoing(&[
            b"ERR Unknown PFDEBUG subcommand '",
            super::c_text(sub, usize::MAX),
            b"'",
        ]))
    }
}

/// The runs of a sparse HyperLogLog as `PFDEBUG DECODE` spells them: `z:len` for a zero run,
/// `Z:len` for a long zero run, `v:value,len` for a run of one value.
fn decode_sparse(runs: &[u8]) -> String {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(&op) = runs.get(at) {
        if op & 0xc0 == 0 {
            out.push(format!("z:{}", (op & 0x3f) + 1));
            at += 1;
        } else if op & 0x80 == 0 {
            let low = usize::from(runs.get(at + 1).copied().unwrap_or(0));
            out.push(format!("Z:{}", ((usize::from(op & 0x3f) << 8) | low) + 1));
            at += 2;
        } else {
            out.push(format!("v:{},{}", ((op >> 2) & 0x1f) + 1, (op & 3) + 1));
            at += 1;
        }
    }
    out.join(" ")
}

/// `LOLWUT [VERSION v [arg…]]`: which drawing Redis's `lolwutCommand` picks for the version, its
/// arguments checked as Redis checks them, and the version line.
fn lolwut_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let server = cx.engine().version();
    let mut drawing = None;
    if args.remaining() >= 2 && args.eat("version") {
        // Redis prints the version as C's `(unsigned int)` of a `long`, then reads its digits.
        let version = args.next_int()? as u32;
        let text = format!("{version}.0.0");
        drawing = match text.as_bytes() {
            [b'5', b'.', minor, ..] if *minor != b'9' => Some(5),
            [b'4', b'.', b'9', ..] => Some(5),
            [b'6', b'.', minor, ..] if *minor != b'9' => Some(6),
            [b'5', b'.', b'9', ..] => Some(6),
            _ => None,
        };
    }
    let caption = match drawing {
        None => "",
        Some(version) => {
            // Version 5 reads three sizes, version 6 two, each a C `long`.
            let sizes = if version == 5 { 3 } else { 2 };
            for arg in args.take(sizes) {
                int(arg)?;
            }
            if version == 5 {
                "\nGeorg Nees - schotter, plotter on paper, 1968. "
            } else {
                "\nDedicated to the 8 bit game developers of past and present.\n\
                 Original 8 bit image from Plaguemon by hikikomori. "
            }
        }
    };
    // Valkey drops the space after `ver.` where it draws nothing (and draws a Julia set for
    // its own version 9, which the fake does not: `differences.md`).
    let (name, space) = match (server.is_valkey(), drawing) {
        (false, _) => ("Redis", " "),
        (true, Some(_)) => ("Valkey", " "),
        (true, None) => ("Valkey", ""),
    };
    Ok(Frame::text(format!(
        "{caption}{name} ver.{space}{}\n",
        server.server_version()
    )))
}
