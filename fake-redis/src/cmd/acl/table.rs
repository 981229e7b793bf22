//! The commands ACL rules name, numbered: Redis 7.0.15's own table (`COMMAND`'s capture in
//! `fake-redis/data/redis-7.0/`, for every version the fake imitates), every command and subcommand with its categories, so a rule like
//! `+@read` or `-config|set` covers exactly what it covers on Redis, the commands the fake lacks
//! included. A user's permissions are a bit per command of this table ([`Bits`]), as Redis keeps
//! them, plus one bit that only `+@all` sets: the right to run commands added later, which
//! decides whether a user's rules are described from `+@all` or from `-@all`.

use crate::cmd::command_docs::redis_entries;
use crate::resp::Frame;
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub(crate) use crate::engine::acl::Bits;

/// Redis 7.0's command categories, in its order (`ACL CAT`, and the order in which a user's
/// rules are described).
pub(crate) const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// One command or subcommand of Redis's table.
pub(crate) struct Command {
    /// Its full name in lowercase, as rules and errors name it: `get`, `config|get`.
    pub name: String,
    /// Its categories, a bit per index of [`CATEGORIES`].
    pub categories: u32,
    /// The subcommands of a container (`CONFIG`), by id.
    pub subcommands: Vec<usize>,
    /// Whether it runs before authentication (`AUTH`, `HELLO`): no rule denies it.
    pub no_auth: bool,
    /// Its `COMMAND INFO` entry, for its key specs.
    pub entry: &'static Frame,
}

/// Every command of Redis's table, numbered.
pub(crate) struct Table {
    /// By id; ids follow the full names' order.
    pub commands: Vec<Command>,
    by_name: BTreeMap<&'static [u8], usize>,
    /// The top-level commands' ids, in name order: the order in which a description names
    /// single commands (Redis walks a hash table there, whose order changes with every process).
    pub top_level: Vec<usize>,
}

impl Table {
    /// The bit no command has: set by `+@all` (`allcommands`) only, it lets a user run commands
    /// added later.
    pub fn future_bit(&self) -> usize {
        self.commands.len()
    }

    /// The id of the command named `name` (a full name, any case), without the `|` split Redis's
    /// `ACLLookupCommand` makes.
    pub fn id(&self, name: &[u8]) -> Option<usize> {
        self.by_name.get(&name.to_ascii_lowercase()[..]).copied()
    }

    /// Redis's `ACLLookupCommand`: `get`, or `config|get` for a container's subcommand; None for
    /// anything else (an unknown name, a subcommand of a command that has none, three parts).
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut parts = name.split(|&b| b == b'|');
        let parent = self.id(parts.next()?)?;
        match (parts.next(), parts.next()) {
            (None, _) => Some(parent),
            (Some(_), None) if !self.commands[parent].subcommands.is_empty() => self.id(name),
            _ => None,
        }
    }

    /// The bit of category `name` (any case), if Redis has it.
    pub fn category(name: &[u8]) -> Option<u32> {
        CATEGORIES
            .iter()
            .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
            .map(|i| 1 << i)
    }
}

/// The table, built once from the captured `COMMAND` reply.
pub(crate) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        // Redis 7.0's table for every version, for now: the commands later releases add are
        // ones the fake does not implement.
        let entries = redis_entries(crate::engine::Version::V7_0);
        let mut commands = Vec::with_capacity(entries.len());
        let mut by_name = BTreeMap::new();
        for (id, (name, entry)) in entries.iter().enumerate() {
            let Frame::Array(fields) = entry else {
                unreachable!("a COMMAND entry is an array")
            };
            let words = |i: usize| -> Vec<Vec<u8>> {
                match fields.get(i) {
                    Some(Frame::Array(v) | Frame::Set(v)) => v
                        .iter()
                        .filter_map(|f| match f {
                            Frame::Bulk(b) => Some(b.to_vec()),
                            Frame::Simple(s) => Some(s.as_bytes().to_vec()),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                }
            };
            let categories = words(6)
                .iter()
                .filter_map(|c| c.strip_prefix(b"@").and_then(Table::category))
                .fold(0, |all, c| all | c);
            commands.push(Command {
                name: String::from_utf8_lossy(name).into_owned(),
                categories,
                subcommands: Vec::new(),
                no_auth: words(2).iter().any(|f| f == b"no_auth"),
                entry,
            });
            by_name.insert(&name[..], id);
        }
        let mut top_level = Vec::new();
        for id in 0..commands.len() {
            let name = commands[id].name.clone();
            match name.split_once('|') {
                Some((parent, _)) => {
                    let parent = by_name[parent.as_bytes()];
                    commands[parent].subcommands.push(id);
                }
                None => top_level.push(id),
            }
        }
        Table {
            commands,
            by_name,
            top_level,
        }
    })
}

impl Bits {
    /// No command.
    pub fn none() -> Bits {
        Bits(vec![0; table().commands.len() / 64 + 1])
    }

    /// Every command, the future bit included.
    pub fn all() -> Bits {
        Bits(vec![u64::MAX; table().commands.len() / 64 + 1])
    }
}
