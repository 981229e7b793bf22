//! The users of a server and its ACL log: the state `ACL`, `AUTH` and the permission check
//! read and change, kept with the rest of the server's so that a restart can start it over.
//!
//! Only the state lives here (what a user is, who the users are, whether the `default` user
//! alone may run everything, whether a new connection must authenticate). What rules mean and
//! how users are described back depends on Redis's command table, which the commands own
//! (`cmd/acl/`): it builds the `default` user of a server that starts ([`Acl`]'s constructor is
//! the engine's `new_acl` hook), applies `ACL SETUSER`'s rules and checks each call.

pub(crate) mod log;

use bytes::Bytes;
use std::collections::BTreeMap;

/// A server's users and its ACL log.
pub(crate) struct Acl {
    pub users: Users,
    pub log: log::Log,
}

/// The name every connection starts with.
pub(crate) const DEFAULT_USER: Bytes = Bytes::from_static(b"default");

/// A set of commands a user may run: a bit per command of the command table
/// (`cmd/acl/table.rs`), and the future bit that `+@all` sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bits(pub Vec<u64>);

impl Bits {
    pub fn get(&self, id: usize) -> bool {
        self.0[id / 64] & (1 << (id % 64)) != 0
    }

    pub fn set(&mut self, id: usize, on: bool) {
        if on {
            self.0[id / 64] |= 1 << (id % 64);
        } else {
            self.0[id / 64] &= !(1 << (id % 64));
        }
    }
}

/// A key pattern and what it allows: `~p` both, `%R~p` reading, `%W~p` writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyPattern {
    pub pattern: Bytes,
    pub read: bool,
    pub write: bool,
}

/// What one selector allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Selector {
    /// The commands, a bit each.
    pub allowed: Bits,
    /// Every bit is set (`+@all` and nothing taken away since).
    pub all_commands: bool,
    /// A command not allowed whole, allowed with these first arguments (`+select|0`), by id.
    pub first_args: BTreeMap<usize, Vec<Bytes>>,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Bytes>,
    /// The command rules as given, in order, each once (Redis 7.2's `command_rules`): later
    /// releases describe a selector by them instead of computing the rules from the bits.
    pub rules: String,
}

/// One user: flags, password hashes (SHA-256 in lowercase hex, in the order they were added),
/// and its selectors, the root first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct User {
    /// `on` (may authenticate) or `off`.
    pub enabled: bool,
    /// `nopass`: any password authenticates.
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)), `skip-sanitize-payload` (Some(false)), or neither.
    pub sanitize: Option<bool>,
    pub passwords: Vec<String>,
    pub selectors: Vec<Selector>,
}

impl User {
    /// The root selector, which rules outside parentheses change.
    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    /// Whether it may run everything on every key and channel: the check can be skipped.
    pub fn allows_everything(&self) -> bool {
        let root = self.root();
        root.all_commands && root.all_keys && root.all_channels
    }
}

/// The users of a server, by name (in byte order, as Redis's radix tree lists them), and its
/// ACL log.
pub(crate) struct Users {
    pub users: BTreeMap<Bytes, User>,
    /// Only `default` exists and it may run everything: no call needs a check.
    pub open: bool,
}

impl Users {
    /// Whether no call needs a permission check (see [`Users`]' `open`).
    #[inline]
    pub fn is_open(&self) -> bool {
        self.open
    }

    pub fn get(&self, name: &[u8]) -> Option<&User> {
        self.users.get(name)
    }

    pub fn default_user(&self) -> &User {
        &self.users[&b"default"[..]]
    }

    /// Whether a new connection must authenticate (Redis's `authRequired`): the `default`
    /// user needs a password or is off.
    pub fn auth_required(&self) -> bool {
        let default = self.default_user();
        !default.nopass || !default.enabled
    }

    /// Every user, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &User)> {
        self.users.iter()
    }

    /// Creates or replaces a user.
    pub fn insert(&mut self, name: Bytes, user: User) {
        self.users.insert(name, user);
        self.refresh();
    }

    /// Removes a user: whether it existed.
    pub fn remove(&mut self, name: &[u8]) -> bool {
        let removed = self.users.remove(name).is_some();
        self.refresh();
        removed
    }

    fn refresh(&mut self) {
        self.open = self.users.len() == 1 && {
            let default = self.default_user();
            default.selectors.len() == 1 && default.allows_everything()
        };
    }
}
