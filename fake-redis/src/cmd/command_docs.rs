//! `COMMAND` and its subcommands, answered from the real server's own description of its commands,
//! per version the fake imitates (Redis 7.0.15, Redis 7.4.1, Valkey 9.1.2).
//!
//! Clients read `COMMAND` to learn arities, flags, key positions and documentation (redis-py's
//! `r.command()`, cluster clients routing by key). Writing those tables by hand for every command
//! would drift from Redis, so the fake serves what a real `redis-server` answered: the RESP3
//! bytes of `COMMAND` and `COMMAND DOCS` are committed in a folder per version under
//! `fake-redis/data/` (written by `fake-redis/scripts/capture-redis-tables.py`), each parsed once
//! at its first use, and every command of the fake's table gets its version's entry, so a command
//! added to the table is described with no further work. A command of the fake's table is known
//! in a version iff that version's `COMMAND` lists it ([`has_command`]); a subcommand likewise. A
//! test checks that the table's arities agree with Redis 7.0's.
//!
//! `COMMAND GETKEYS` and `GETKEYSANDFLAGS` read the keys off a call through the entry's key
//! specs, as Redis's `getKeysUsingKeySpecs` does; the few commands whose keys only a Redis C
//! function can find (`SORT`, `MIGRATE`) are not served here.

use super::{
    ALL, Args, CONTAINER, CmdResult, Cx, Spec, is, lookup_in, unknown_subcommand, wrong_arity,
};
use crate::engine::Version;
use crate::engine::glob::glob_match;
use crate::resp::{Frame, ReplyParser};
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub(crate) static COMMAND: Spec = Spec::new("command", -1, CONTAINER, command_command);

/// `COMMAND`'s and `COMMAND DOCS`'s replies, in RESP3, of each version's server, by
/// [`Version::index`].
static CAPTURES: [(&[u8], &[u8]); 3] = [
    (
        include_bytes!("../../data/redis-7.0/command.resp"),
        include_bytes!("../../data/redis-7.0/command-docs.resp"),
    ),
    (
        include_bytes!("../../data/redis-7.4/command.resp"),
        include_bytes!("../../data/redis-7.4/command-docs.resp"),
    ),
    (
        include_bytes!("../../data/valkey-9.1/command.resp"),
        include_bytes!("../../data/valkey-9.1/command-docs.resp"),
    ),
];

/// Redis's tables, by lowercase full name (`get`, `config|get`).
struct Tables {
    /// Each command's and subcommand's `COMMAND INFO` entry.
    info: BTreeMap<Vec<u8>, Frame>,
    /// Each top-level command's `COMMAND DOCS` entry (its subcommands' inside it).
    docs: BTreeMap<Vec<u8>, Frame>,
    /// Each subcommand's name and arity, for the check every call of a container passes.
    subcommands: BTreeMap<Vec<u8>, Subcommand>,
}

/// A subcommand of a container command (`CONFIG GET`), as Redis's table describes it.
pub(crate) struct Subcommand {
    /// Its full name, as Redis's errors and `CLIENT LIST`'s `cmd` name it: `config|get`.
    pub full_name: String,
    /// Redis's arity, counting the container's name and the subcommand's.
    arity: i32,
}

impl Subcommand {
    fn arity_ok(&self, argc: usize) -> bool {
        super::arity_allows(self.arity, argc)
    }
}

/// Why a call of a container command is refused before its handler runs.
pub(crate) enum Refusal {
    /// The container has no such subcommand.
    Unknown,
    /// The subcommand (named in full) has the wrong number of arguments.
    Arity(&'static str),
}

impl Refusal {
    /// The error a client's call gets (`ERR unknown subcommand 'FOO'. Try CLIENT HELP.`).
    pub(crate) fn error(&self, spec: &Spec, argv: &[Bytes]) -> Frame {
        match self {
            Refusal::Unknown => unknown_subcommand(&spec.name.to_ascii_uppercase(), &argv[1]),
            Refusal::Arity(name) => wrong_arity(name),
        }
    }
}

/// The name Redis gives `argv`'s command once it has looked its subcommand up
/// (`lookupCommand`) and checked that subcommand's arity (`commandCheckArity`): the
/// subcommand's full name (`config|get`) for a container ([`CONTAINER`]) called with one, the
/// command's name otherwise. The command's own arity is the caller's to check first.
#[inline]
pub(crate) fn command_name(
    version: Version,
    spec: &'static Spec,
    argv: &[Bytes],
) -> Result<&'static str, Refusal> {
    match argv.get(1) {
        Some(sub) if spec.has(CONTAINER) => {
            let sub = subcommand(version, spec, sub).ok_or(Refusal::Unknown)?;
            if sub.arity_ok(argv.len()) {
                Ok(&sub.full_name)
            } else {
                Err(Refusal::Arity(&sub.full_name))
            }
        }
        _ => Ok(spec.name),
    }
}

/// The container's subcommand named `sub` (any case), looked up without allocating.
fn subcommand(version: Version, container: &Spec, sub: &[u8]) -> Option<&'static Subcommand> {
    // Longer than any of Redis's full names: a longer call names no subcommand.
    let mut key = [0u8; 64];
    let parent = container.name.as_bytes();
    let len = parent.len() + 1 + sub.len();
    if len > key.len() {
        return None;
    }
    key[..parent.len()].copy_from_slice(parent);
    key[parent.len()] = b'|';
    for (k, b) in key[parent.len() + 1..len].iter_mut().zip(sub) {
        *k = b.to_ascii_lowercase();
    }
    tables(version).subcommands.get(&key[..len])
}

fn parse(resp: &'static [u8]) -> Frame {
    let mut buf = BytesMut::from(resp);
    ReplyParser::new()
        .parse(&mut buf)
        .ok()
        .flatten()
        .expect("the committed table is one RESP3 reply")
}

/// The tables of `version`'s server, parsed at their first use.
fn tables(version: Version) -> &'static Tables {
    static TABLES: [OnceLock<Tables>; 3] = [const { OnceLock::new() }; 3];
    TABLES[version.index()].get_or_init(|| {
        let (command_resp, docs_resp) = CAPTURES[version.index()];
        let mut info = BTreeMap::new();
        if let Frame::Array(entries) = parse(command_resp) {
            for entry in entries {
                add_entry(&mut info, entry);
            }
        }
        let subcommands = info
            .iter()
            .filter(|(name, _)| name.contains(&b'|'))
            .map(|(name, entry)| {
                let arity = match entry {
                    Frame::Array(fields) => integer(fields.get(1)) as i32,
                    _ => 0,
                };
                let full_name = String::from_utf8_lossy(name).into_owned();
                (name.clone(), Subcommand { full_name, arity })
            })
            .collect();
        let mut docs = BTreeMap::new();
        if let Frame::Map(pairs) = parse(docs_resp) {
            for (name, doc) in pairs {
                if let Some(name) = text(&name) {
                    docs.insert(name.to_ascii_lowercase(), doc);
                }
            }
        }
        Tables {
            info,
            docs,
            subcommands,
        }
    })
}

/// Files an entry and its subcommands' under their full names.
fn add_entry(info: &mut BTreeMap<Vec<u8>, Frame>, entry: Frame) {
    let Frame::Array(fields) = &entry else { return };
    let Some(name) = fields.first().and_then(text) else {
        return;
    };
    if let Some(subs) = fields.get(9).and_then(items) {
        for sub in subs {
            add_entry(info, sub.clone());
        }
    }
    info.insert(name.to_ascii_lowercase(), entry);
}

/// `version`'s `COMMAND INFO` entry of every command and subcommand, by lowercase full name
/// (`get`, `config|get`), the commands the fake lacks included: what ACL rules name
/// (`cmd/acl/`), so that a rule and its categories mean what they mean on that server.
pub(crate) fn redis_entries(version: Version) -> &'static BTreeMap<Vec<u8>, Frame> {
    &tables(version).info
}

/// Whether `version`'s server has the command or subcommand named `full_name` (lowercase: `get`,
/// `client|no-touch`).
pub(crate) fn has_command(version: Version, full_name: &str) -> bool {
    tables(version).info.contains_key(full_name.as_bytes())
}

/// The keys of the call `argv` and each key's flags (`RW`, `access`, ...), as Redis's
/// `getKeysFromCommandWithSpecs` reads them off `entry`'s key specs for the ACL check: a spec
/// that cannot be read off this call (a key count that is not a number, more keys than
/// arguments) gives no keys at all, as Redis's fallback then finds none; `SORT`'s keys, which
/// only Redis's C code finds, are found as its `sortGetKeys` finds them.
pub(crate) fn keys_and_flags(entry: &Frame, argv: &[Bytes]) -> Vec<(usize, Vec<Vec<u8>>)> {
    let Frame::Array(fields) = entry else {
        return Vec::new();
    };
    if is(&argv[0], "sort") || is(&argv[0], "sort_ro") {
        return sort_keys(argv);
    }
    let Some(specs) = fields.get(8).and_then(items) else {
        return Vec::new();
    };
    let flags = |f: &Frame| {
        items(f)
            .unwrap_or_default()
            .iter()
            .filter_map(text)
            .collect::<Vec<_>>()
    };
    let mut keys = Vec::new();
    for spec in specs {
        let Some(positions) = keys_of_spec(spec, argv) else {
            return Vec::new();
        };
        let mut key_flags = field(spec, "flags").map(flags).unwrap_or_default();
        if key_flags.iter().any(|f| f == b"not_key") {
            continue;
        }
        if key_flags.iter().any(|f| f == b"variable_flags") {
            key_flags = variable_key_flags(argv, key_flags);
        }
        keys.extend(positions.into_iter().map(|i| (i, key_flags.clone())));
    }
    keys
}

/// The positions of the keys a cluster node routes the call `argv` of the command named
/// `full_name` (`get`, `config|get`) by, as Redis's `getNodeByQuery` reads them off its key
/// specs: the shard channels of `SPUBLISH` and `SSUBSCRIBE` count; a spec that cannot be read
/// off this call gives none at all.
pub(crate) fn routing_keys(version: Version, full_name: &str, argv: &[Bytes]) -> Vec<usize> {
    if is(&argv[0], "sort") || is(&argv[0], "sort_ro") {
        return sort_keys(argv).into_iter().map(|(at, _)| at).collect();
    }
    let Some(Frame::Array(fields)) = tables(version).info.get(full_name.as_bytes()) else {
        return Vec::new();
    };
    let Some(specs) = fields.get(8).and_then(items) else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for spec in specs {
        match keys_of_spec(spec, argv) {
            Some(positions) => keys.extend(positions),
            None => return Vec::new(),
        }
    }
    keys
}

/// `SORT`'s keys as Redis's `sortGetKeys` finds them: the sorted key, read, and the last `STORE`
/// destination, overwritten (the `BY` and `GET` patterns are not keys to it); `SORT_RO` has only
/// the first.
fn sort_keys(argv: &[Bytes]) -> Vec<(usize, Vec<Vec<u8>>)> {
    let mut keys = vec![(1, vec![b"RO".to_vec(), b"access".to_vec()])];
    if is(&argv[0], "sort_ro") {
        return keys;
    }
    let mut store = None;
    let mut i = 2;
    while i < argv.len() {
        let skip = [("limit", 2), ("get", 1), ("by", 1)]
            .iter()
            .find(|(word, _)| is(&argv[i], word))
            .map(|&(_, n)| n);
        match skip {
            Some(n) => i += n,
            // Redis looks at the destination as an option name too.
            None if is(&argv[i], "store") && i + 1 < argv.len() => store = Some(i + 1),
            None => {}
        }
        i += 1;
    }
    keys.extend(store.map(|at| (at, vec![b"OW".to_vec(), b"update".to_vec()])));
    keys
}

/// The elements of an array or a set (Redis sends key specs and subcommands as sets in RESP3).
fn items(frame: &Frame) -> Option<&[Frame]> {
    match frame {
        Frame::Array(v) | Frame::Set(v) => Some(v),
        _ => None,
    }
}

/// The bytes of a bulk or simple string.
fn text(frame: &Frame) -> Option<Vec<u8>> {
    match frame {
        Frame::Bulk(b) => Some(b.to_vec()),
        Frame::Simple(s) => Some(s.as_bytes().to_vec()),
        _ => None,
    }
}

/// The value under `key` in a RESP3 map.
fn field<'a>(map: &'a Frame, key: &str) -> Option<&'a Frame> {
    let Frame::Map(pairs) = map else { return None };
    pairs
        .iter()
        .find(|(k, _)| text(k).is_some_and(|k| k == key.as_bytes()))
        .map(|(_, v)| v)
}

fn integer(frame: Option<&Frame>) -> i64 {
    match frame {
        Some(Frame::Integer(n)) => *n,
        _ => 0,
    }
}

/// Redis's `COMMAND INFO` entry for a command of the fake's table; one of the fake's own
/// (name and arity, nothing else) for a command Redis does not have.
fn entry_of(version: Version, spec: &Spec) -> Frame {
    match tables(version).info.get(spec.name.as_bytes()) {
        Some(entry) => entry.clone(),
        None => Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(spec.name.as_bytes())),
            Frame::Integer(i64::from(spec.arity)),
            Frame::Set(Vec::new()),
            Frame::Integer(0),
            Frame::Integer(0),
            Frame::Integer(0),
            Frame::Set(Vec::new()),
            Frame::Set(Vec::new()),
            Frame::Array(Vec::new()),
            Frame::Array(Vec::new()),
        ]),
    }
}

/// The fake's command named `name` (`get`, or a subcommand's full name `config|get`) and its
/// Redis entry: None when the fake does not have the command.
fn find(version: Version, name: &[u8]) -> Option<(&'static Spec, Frame)> {
    let lower = name.to_ascii_lowercase();
    let parent = lower.split(|&b| b == b'|').next().unwrap_or_default();
    let spec = lookup_in(version, parent)?;
    if parent.len() == lower.len() {
        return Some((spec, entry_of(version, spec)));
    }
    tables(version).info.get(&lower).map(|e| (spec, e.clone()))
}

/// The fake's commands `version` knows, in the table's order.
fn known(version: Version) -> impl Iterator<Item = &'static Spec> {
    ALL.iter()
        .copied()
        .filter(move |s| has_command(version, s.name))
}

/// Every name `COMMAND LIST` gives: the fake's commands and, for containers, their subcommands.
fn all_names(version: Version) -> Vec<Bytes> {
    let mut names = Vec::new();
    for spec in known(version) {
        names.push(Bytes::from_static(spec.name.as_bytes()));
        if let Some(Frame::Array(fields)) = tables(version).info.get(spec.name.as_bytes())
            && let Some(subs) = fields.get(9).and_then(items)
        {
            names.extend(
                subs.iter()
                    .filter_map(|s| match s {
                        Frame::Array(f) => f.first().and_then(text),
                        _ => None,
                    })
                    .map(Bytes::from),
            );
        }
    }
    names
}

/// Checks a subcommand's arity against Redis's table: `ERR wrong number of arguments for
/// 'config|get' command` when wrong. `argc` counts the container's name and the subcommand's.
pub(crate) fn check_subcommand_arity(
    version: Version,
    full_name: &str,
    argc: usize,
) -> Result<(), Frame> {
    match tables(version).subcommands.get(full_name.as_bytes()) {
        Some(sub) if !sub.arity_ok(argc) => Err(wrong_arity(full_name)),
        _ => Ok(()),
    }
}

const HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

fn command_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let version = cx.engine().version();
    let every = || Frame::Array(known(version).map(|s| entry_of(version, s)).collect());
    // Dispatch has checked the subcommand and its arity.
    let Some(sub) = args.next() else {
        return Ok(every());
    };
    if is(sub, "count") {
        Ok(Frame::Integer(known(version).count() as i64))
    } else if is(sub, "help") {
        Ok(Frame::Array(
            HELP.iter().map(|&l| Frame::simple(l)).collect(),
        ))
    } else if is(sub, "list") {
        list(version, args)
    } else if is(sub, "info") {
        if args.remaining() == 0 {
            return Ok(every());
        }
        Ok(Frame::Array(
            args.map(|name| find(version, name).map_or(Frame::Null, |(_, e)| e))
                .collect(),
        ))
    } else if is(sub, "docs") {
        Ok(docs(version, args))
    } else if is(sub, "getkeys") || is(sub, "getkeysandflags") {
        get_keys(version, args.rest(), is(sub, "getkeysandflags"))
    } else {
        Err(unknown_subcommand("COMMAND", sub))
    }
}

/// `COMMAND LIST [FILTERBY MODULE <name> | ACLCAT <category> | PATTERN <pattern>]`.
pub(super) fn list(version: Version, args: &mut Args<'_>) -> CmdResult {
    let names = all_names(version);
    if args.remaining() == 0 {
        return Ok(Frame::Array(names.into_iter().map(Frame::Bulk).collect()));
    }
    if args.remaining() != 3 || !args.eat("filterby") {
        return Err(super::SYNTAX);
    }
    let by = args.next_bytes()?;
    let value = args.next_bytes()?;
    let keep: Box<dyn Fn(&Bytes) -> bool> = if is(by, "module") {
        Box::new(|_| false)
    } else if is(by, "aclcat") {
        let category = [b"@", &value.to_ascii_lowercase()[..]].concat();
        Box::new(move |name| {
            tables(version)
                .info
                .get(&name[..])
                .and_then(|e| match e {
                    Frame::Array(f) => f.get(6),
                    _ => None,
                })
                .and_then(items)
                .is_some_and(|c| c.iter().any(|c| text(c).is_some_and(|c| c == category)))
        })
    } else if is(by, "pattern") {
        let pattern = value.to_ascii_lowercase();
        Box::new(move |name| glob_match(&pattern, &name.to_ascii_lowercase()))
    } else {
        return Err(super::SYNTAX);
    };
    Ok(Frame::Array(
        names
            .into_iter()
            .filter(|n| keep(n))
            .map(Frame::Bulk)
            .collect(),
    ))
}

/// `COMMAND DOCS [<name> ...]`: a map of name to documentation, the unknown names left out.
fn docs(version: Version, args: &mut Args<'_>) -> Frame {
    let docs = &tables(version).docs;
    let of = |name: &[u8]| {
        let lower = name.to_ascii_lowercase();
        lookup_in(version, &lower)?;
        docs.get(&lower)
            .map(|d| (Frame::Bulk(Bytes::from(lower)), d.clone()))
    };
    if args.remaining() == 0 {
        return Frame::Map(
            known(version)
                .filter_map(|s| of(s.name.as_bytes()))
                .collect(),
        );
    }
    Frame::Map(args.filter_map(|name| of(name)).collect())
}

/// `COMMAND GETKEYS <command> <args…>` (`with_flags`: `GETKEYSANDFLAGS`).
fn get_keys(version: Version, argv: &[Bytes], with_flags: bool) -> CmdResult {
    let name = &argv[0];
    let sub_name = argv.get(1).map(|s| {
        let mut full = name.to_ascii_lowercase();
        full.push(b'|');
        full.extend_from_slice(&s.to_ascii_lowercase());
        full
    });
    let invalid = || Frame::error("ERR Invalid command specified");
    let (_, mut entry) = find(version, name).ok_or_else(invalid)?;
    // A container's keys are its subcommand's.
    if let Frame::Array(fields) = &entry
        && fields
            .get(9)
            .and_then(items)
            .is_some_and(|subs| !subs.is_empty())
    {
        let full = sub_name.ok_or_else(invalid)?;
        entry = tables(version)
            .info
            .get(&full)
            .cloned()
            .ok_or_else(invalid)?;
    }
    let Frame::Array(fields) = &entry else {
        return Err(invalid());
    };
    let arity = integer(fields.get(1));
    let argc = argv.len() as i64;
    if (arity > 0 && argc != arity) || argc < -arity {
        return Err(Frame::error(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    // Only Redis's C code finds `SORT`'s keys (its key specs are incomplete).
    let keys = if is(name, "sort") || is(name, "sort_ro") {
        sort_keys(argv)
    } else {
        keys_by_specs(fields, argv)?
    };
    Ok(Frame::Array(
        keys.into_iter()
            .map(|(i, key_flags)| key_reply(&argv[i], key_flags, with_flags))
            .collect(),
    ))
}

/// A key's position in a call, and its flags (`RW`, `access`, ...).
type KeyAndFlags = (usize, Vec<Vec<u8>>);

/// A key of `COMMAND GETKEYS`, or with its flags for `GETKEYSANDFLAGS`.
fn key_reply(key: &Bytes, key_flags: Vec<Vec<u8>>, with_flags: bool) -> Frame {
    let key = Frame::Bulk(key.clone());
    if !with_flags {
        return key;
    }
    let flags = key_flags
        .into_iter()
        .map(|f| Frame::Simple(String::from_utf8_lossy(&f).into_owned().into()))
        .collect();
    Frame::Array(vec![key, Frame::Set(flags)])
}

/// The keys of the call `argv` of the command whose `COMMAND INFO` fields are `fields`, read off
/// its key specs, with their flags.
fn keys_by_specs(fields: &[Frame], argv: &[Bytes]) -> Result<Vec<KeyAndFlags>, Frame> {
    let specs = match fields.get(8).and_then(items) {
        Some(specs) if !specs.is_empty() => specs,
        _ => return Err(Frame::error("ERR The command has no key arguments")),
    };
    let flags = |f: &Frame| {
        items(f)
            .unwrap_or_default()
            .iter()
            .filter_map(text)
            .collect::<Vec<_>>()
    };
    let mut keys = Vec::new();
    let mut valid = true;
    for spec in specs {
        match keys_of_spec(spec, argv) {
            Some(positions) => {
                let mut key_flags = field(spec, "flags").map(flags).unwrap_or_default();
                if key_flags.iter().any(|f| f == b"variable_flags") {
                    key_flags = variable_key_flags(argv, key_flags);
                }
                keys.extend(positions.into_iter().map(|i| (i, key_flags.clone())));
            }
            None => valid = false,
        }
    }
    if !valid || keys.is_empty() {
        let no_mandatory = fields
            .get(2)
            .map(flags)
            .is_some_and(|f| f.iter().any(|f| f == b"no_mandatory_keys"));
        if no_mandatory {
            return Ok(Vec::new());
        }
        return Err(Frame::error("ERR Invalid arguments specified for command"));
    }
    Ok(keys)
}

/// The flags of a key whose spec says they depend on the call (`variable_flags`), as the
/// command's own code in Redis decides them: `SET` without `GET` overwrites its key.
fn variable_key_flags(argv: &[Bytes], spec_flags: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    if is(&argv[0], "set") && !argv[3..].iter().any(|a| is(a, "get")) {
        return vec![b"OW".to_vec(), b"update".to_vec()];
    }
    if is(&argv[0], "set") {
        return vec![b"RW".to_vec(), b"access".to_vec(), b"update".to_vec()];
    }
    spec_flags
}

/// The positions in `argv` of the keys one key spec finds, as Redis's `getKeysUsingKeySpecs`
/// reads them: None when the spec cannot be read off this call (its keys need Redis's own code,
/// or a key count that is not a number).
fn keys_of_spec(spec: &Frame, argv: &[Bytes]) -> Option<Vec<usize>> {
    let argc = argv.len() as i64;
    let begin = field(spec, "begin_search")?;
    let begin_spec = field(begin, "spec")?;
    let first = match field(begin, "type").and_then(text).as_deref() {
        Some(b"index") => integer(field(begin_spec, "index")),
        Some(b"keyword") => {
            let keyword = field(begin_spec, "keyword").and_then(text)?;
            let start = integer(field(begin_spec, "startfrom"));
            let found = if start >= 0 {
                (start..argc).find(|&i| argv[i as usize].eq_ignore_ascii_case(&keyword))
            } else {
                (1..=(argc + start).max(0))
                    .rev()
                    .find(|&i| argv[i as usize].eq_ignore_ascii_case(&keyword))
            };
            match found {
                Some(i) => i + 1,
                None => return Some(Vec::new()),
            }
        }
        _ => return None,
    };
    let find = field(spec, "find_keys")?;
    let find_spec = field(find, "spec")?;
    let (first, last, step) = match field(find, "type").and_then(text).as_deref() {
        Some(b"range") => {
            let lastkey = integer(field(find_spec, "lastkey"));
            let limit = integer(field(find_spec, "limit"));
            let last = if lastkey >= 0 {
                first + lastkey
            } else if limit == 0 {
                argc + lastkey
            } else {
                first + ((argc - first) / limit + lastkey)
            };
            (first, last, integer(field(find_spec, "keystep")))
        }
        Some(b"keynum") => {
            let at = first + integer(field(find_spec, "keynumidx"));
            let count = argv
                .get(usize::try_from(at).ok()?)
                .and_then(|n| super::int(n).ok())
                .filter(|&n| n >= 0)?;
            let first = first + integer(field(find_spec, "firstkey"));
            // `count` keys, `keystep` apart (Valkey's `MSETEX key value …` steps by 2).
            let step = integer(field(find_spec, "keystep"));
            let span = (count - 1).saturating_mul(step.max(1));
            (first, first.saturating_add(span), step)
        }
        _ => return None,
    };
    let mut keys = Vec::new();
    let mut i = first;
    while i <= last && step > 0 {
        if i >= argc || i < 1 {
            // More keys than arguments: Redis lets the command report the error.
            return None;
        }
        keys.push(i as usize);
        i += step;
    }
    Some(keys)
}

/// The flags of Redis's command table that decide how the server treats a call beyond its
/// handler: whether `MONITOR` shows it, whether a monitor may send it, whether `CLIENT PAUSE
/// WRITE` holds it (`cmd/client.rs`).
pub(crate) mod flag {
    /// `admin`: never shown to monitors.
    pub const ADMIN: u16 = 1;
    /// `skip_monitor`: not shown after it runs (`EVAL`, `FCALL` show themselves first).
    pub const SKIP_MONITOR: u16 = 2;
    /// `readonly`.
    pub const READONLY: u16 = 4;
    /// `write`.
    pub const WRITE: u16 = 8;
    /// `no_multi`: refused inside a transaction (`SHUTDOWN`, `SAVE`).
    pub const NO_MULTI: u16 = 32;
    /// Redis's internal `may-replicate`, which `COMMAND` does not list: a command that may
    /// produce replication traffic without being a write (`EVAL`, `FCALL`, `PUBLISH`, `PFCOUNT`).
    pub const MAY_REPLICATE: u16 = 16;
    /// `denyoom`: refused while the server is over `maxmemory` (`engine/evict.rs`).
    pub const DENYOOM: u16 = 64;
    /// `stale`: served by a replica whose link is down even with `replica-serve-stale-data no`.
    pub const STALE: u16 = 128;
}

/// The commands Redis 7.0's table flags `may-replicate` (`COMMAND` does not show that flag).
const MAY_REPLICATE: &[&str] = &["eval", "evalsha", "fcall", "pfcount", "publish", "spublish"];

/// Whether client `id`'s transaction has queued a command with any of the [`flag`]s of `mask`:
/// how Redis judges an `EXEC` (out of memory, `CLIENT PAUSE WRITE`), by what it would run.
pub(crate) fn queued_with_flag(engine: &crate::engine::Engine, id: u64, mask: u16) -> bool {
    queued_any(engine, id, |flags| flags & mask != 0)
}

/// Whether client `id`'s transaction has queued a command without the [`flag`] `bit`: how
/// Redis judges an `EXEC` on a stale replica (`stale`).
pub(crate) fn queued_without_flag(engine: &crate::engine::Engine, id: u64, bit: u16) -> bool {
    queued_any(engine, id, |flags| flags & bit == 0)
}

fn queued_any(engine: &crate::engine::Engine, id: u64, test: impl Fn(u16) -> bool) -> bool {
    let Some(multi) = engine.client(id).and_then(|c| c.multi.as_ref()) else {
        return false;
    };
    let version = engine.version();
    multi.queue.iter().any(|argv| {
        argv.first()
            .and_then(|name| lookup_in(version, name))
            .and_then(|spec| command_name(version, spec, argv).ok())
            .is_some_and(|full| test(redis_flags(version, full)))
    })
}

/// The [`flag`]s of the command or subcommand named `full_name` (`get`, `client|pause`) in
/// Redis's table; 0 for a name it does not have.
pub(crate) fn redis_flags(version: Version, full_name: &str) -> u16 {
    static FLAGS: [OnceLock<BTreeMap<Vec<u8>, u16>>; 3] = [const { OnceLock::new() }; 3];
    let table = FLAGS[version.index()].get_or_init(|| {
        tables(version)
            .info
            .iter()
            .map(|(name, entry)| {
                let mut bits = 0;
                if let Frame::Array(fields) = entry {
                    for f in fields.get(2).and_then(items).unwrap_or_default() {
                        bits |= match text(f).as_deref() {
                            Some(b"admin") => flag::ADMIN,
                            Some(b"skip_monitor") => flag::SKIP_MONITOR,
                            Some(b"readonly") => flag::READONLY,
                            Some(b"write") => flag::WRITE,
                            Some(b"no_multi") => flag::NO_MULTI,
                            Some(b"denyoom") => flag::DENYOOM,
                            Some(b"stale") => flag::STALE,
                            _ => 0,
                        };
                    }
                }
                if MAY_REPLICATE.iter().any(|m| m.as_bytes() == &name[..]) {
                    bits |= flag::MAY_REPLICATE;
                }
                (name.clone(), bits)
            })
            .collect()
    });
    table.get(full_name.as_bytes()).copied().unwrap_or(0)
}

/// The keys of a call, as `COMMAND GETKEYS` finds them (none for a call it cannot read keys
/// from).
pub(crate) fn keys_of(version: Version, argv: &[Bytes]) -> Vec<Bytes> {
    match get_keys(version, argv, false) {
        Ok(Frame::Array(keys)) => keys
            .into_iter()
            .filter_map(|k| match k {
                Frame::Bulk(k) => Some(k),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first release that has `spec`'s command, and its tables.
    fn first_tables(spec: &Spec) -> (Version, &'static Tables) {
        Version::ALL
            .into_iter()
            .map(|v| (v, tables(v)))
            .find(|(_, t)| t.info.contains_key(spec.name.as_bytes()))
            .unwrap_or_else(|| panic!("no release has the command {}", spec.name))
    }

    #[test]
    fn every_command_of_the_table_has_its_first_release_s_entry_and_arity() {
        for spec in ALL {
            let (v, t) = first_tables(spec);
            let Some(Frame::Array(fields)) = t.info.get(spec.name.as_bytes()) else {
                panic!("{v} describes {} as an array", spec.name);
            };
            assert_eq!(
                fields.get(1),
                Some(&Frame::Integer(i64::from(spec.arity))),
                "the arity of {}",
                spec.name
            );
        }
    }

    #[test]
    fn exactly_the_commands_redis_gives_subcommands_are_containers() {
        for spec in ALL {
            let subs = match first_tables(spec).1.info.get(spec.name.as_bytes()) {
                Some(Frame::Array(fields)) => fields.get(9).and_then(items).map_or(0, <[_]>::len),
                _ => 0,
            };
            assert_eq!(
                spec.has(CONTAINER),
                subs > 0,
                "the CONTAINER flag of {}",
                spec.name
            );
        }
    }

    #[test]
    fn docs_cover_every_command_of_the_table() {
        // In every release that has the command.
        for spec in ALL {
            assert!(
                first_tables(spec).1.docs.contains_key(spec.name.as_bytes()),
                "no docs for {}",
                spec.name
            );
        }
    }

    #[test]
    fn a_release_knows_exactly_the_commands_its_server_lists() {
        assert!(!has_command(Version::V7_0, "waitaof"));
        assert!(has_command(Version::V7_4, "waitaof"));
        assert!(has_command(Version::Valkey9_1, "waitaof"));
        assert!(!has_command(Version::V7_4, "delifeq"));
        assert!(has_command(Version::Valkey9_1, "delifeq"));
    }
}
