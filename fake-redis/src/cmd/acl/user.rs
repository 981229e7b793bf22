//! Users and their rules, as Redis 7.0's `acl.c` keeps them: a user is flags, password hashes and
//! selectors; a selector is the commands (a bit each, [`Bits`]), key patterns and channel
//! patterns it allows. The first selector is the root, which rules outside parentheses change;
//! `(...)` adds another, and a call is allowed when any selector allows it (`check.rs`).
//!
//! [`User::apply`] is Redis's `ACLSetUser` and [`Selector::apply`] its `ACLSetSelector`, rule by
//! rule, with their errors. The descriptions (`ACL LIST`, `ACL GETUSER`) are computed from the
//! permissions, not remembered from the rules, as Redis 7.0 computes them: its
//! `ACLDescribeSelectorCommandRules` starts from `+@all` or `-@all`, adds the categories that fit
//! best, then names the single commands that still differ. Redis names those in the order of a
//! hash table whose seed changes with every process, so two redis-servers describe the same
//! user differently; the fake names them in name order. Redis 7.2 and later (7.4, Valkey) keep
//! the command rules as given instead, each once, in the order last given, and describe a
//! selector by them ([`Selector::describe_commands_as`]).

use super::table::{Bits, CATEGORIES, Table, table};
use crate::engine::Version;
pub(crate) use crate::engine::acl::{KeyPattern, Selector, User, Users};
use bytes::Bytes;
use std::collections::BTreeMap;

/// Why a rule was refused: Redis's `ACLSetUserStringError`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuleError {
    Syntax,
    UnknownCommand,
    KeyAfterAllKeys,
    ChannelAfterAllChannels,
    NoSuchPassword,
    BadHash,
    FirstArgOfSubcommand,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAllKeys => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelAfterAllChannels => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list \
                 of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::FirstArgOfSubcommand => {
                "Allowing first-arg of a subcommand is not supported"
            }
        }
    }
}

fn is(op: &[u8], word: &str) -> bool {
    op.eq_ignore_ascii_case(word.as_bytes())
}

/// Redis's `ACLStringHasSpaces`: a space (C's `isspace`) or a NUL.
pub(crate) fn has_spaces(text: &[u8]) -> bool {
    text.iter()
        .any(|&b| b == 0 || b == b' ' || (b'\t'..=b'\r').contains(&b))
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        match (self.read, self.write) {
            (true, false) => out.extend_from_slice(b"%R~"),
            (false, true) => out.extend_from_slice(b"%W~"),
            _ => out.push(b'~'),
        }
        out.extend_from_slice(&self.pattern);
    }
}

impl Selector {
    /// A selector that allows nothing, or every channel only when `acl-pubsub-default` is
    /// `allchannels` (`all_channels`; Redis 7.0's default is `resetchannels`).
    pub fn new(all_channels: bool) -> Selector {
        Selector {
            allowed: Bits::none(),
            all_commands: false,
            first_args: BTreeMap::new(),
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
            rules: String::new(),
        }
    }

    /// A selector that allows everything: the `default` user's.
    pub fn everything() -> Selector {
        Selector {
            allowed: Bits::all(),
            all_commands: true,
            all_keys: true,
            ..Selector::new(true)
        }
    }

    fn set_bit(&mut self, id: usize, allow: bool) {
        self.allowed.set(id, allow);
        if !allow {
            self.all_commands = false;
        }
    }

    /// Redis's `ACLChangeSelectorPerm`: the command and all its subcommands.
    fn change(&mut self, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.first_args.remove(&id);
        for &sub in &table().commands[id].subcommands {
            self.set_bit(sub, allow);
        }
    }

    /// Redis's `ACLSetSelectorCommandBitsForCategory`: every command and subcommand of the
    /// category.
    fn change_category(&mut self, category: u32, allow: bool) {
        let t = table();
        for &id in &t.top_level {
            if t.commands[id].categories & category != 0 {
                self.change(id, allow);
            }
            for &sub in &t.commands[id].subcommands {
                if t.commands[sub].categories & category != 0 {
                    self.change(sub, allow);
                }
            }
        }
    }

    /// Redis's `ACLSetSelector`: one rule about commands, keys or channels.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let t = table();
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        if is(op, "allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is(op, "resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is(op, "allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is(op, "resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is(op, "allcommands") || is(op, "+@all") {
            self.allowed = Bits::all();
            self.all_commands = true;
            self.first_args.clear();
            self.rules.clear();
        } else if is(op, "nocommands") || is(op, "-@all") {
            self.allowed = Bits::none();
            self.all_commands = false;
            self.first_args.clear();
            self.rules.clear();
        } else if op[0] == b'~' || op[0] == b'%' {
            self.add_key_pattern(op)?;
        } else if op[0] == b'&' {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAllChannels);
            }
            let pattern = &op[1..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c[..] == *pattern) {
                self.channels.push(Bytes::copy_from_slice(pattern));
            }
        } else if op.len() > 1 && op[1] == b'@' && (op[0] == b'+' || op[0] == b'-') {
            let category = Table::category(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            self.change_category(category, op[0] == b'+');
            self.retain_rule(&String::from_utf8_lossy(&op[1..]), op[0] == b'+');
        } else if op[0] == b'+' {
            self.allow_command(&op[1..])?;
        } else if op[0] == b'-' {
            let id = t.lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.change(id, false);
            self.retain_rule(&t.commands[id].name, false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAllKeys);
        }
        let (mut read, mut write) = (false, false);
        let mut offset = 1;
        if op[0] == b'%' {
            while offset < op.len() {
                match op[offset].to_ascii_uppercase() {
                    b'R' if !read => read = true,
                    b'W' if !write => write = true,
                    b'~' => {
                        offset += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                offset += 1;
            }
        } else {
            (read, write) = (true, true);
        }
        let pattern = &op[offset..];
        if !(read || write) || has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern[..] == *pattern) {
            Some(known) => {
                known.read |= read;
                known.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: Bytes::copy_from_slice(pattern),
                read,
                write,
            }),
        }
        Ok(())
    }

    /// `+command`, `+container|subcommand`, or `+command|first-arg` for a command without
    /// subcommands (Redis still allows that, with a deprecation warning in its log).
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let t = table();
        let Some(bar) = name.iter().rposition(|&b| b == b'|') else {
            let id = t.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change(id, true);
            self.retain_rule(&t.commands[id].name, true);
            return Ok(());
        };
        let (command, first_arg) = (&name[..bar], &name[bar + 1..]);
        let id = t.lookup(command).ok_or(RuleError::UnknownCommand)?;
        if command.contains(&b'|') {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if first_arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if t.commands[id].subcommands.is_empty() {
            let args = self.first_args.entry(id).or_default();
            if !args.iter().any(|a| a.eq_ignore_ascii_case(first_arg)) {
                args.push(Bytes::copy_from_slice(first_arg));
            }
        } else {
            let sub = t.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change(sub, true);
        }
        self.retain_rule(&String::from_utf8_lossy(name), true);
        Ok(())
    }

    /// Redis 7.2's `ACLUpdateCommandRules`: `rule` (a command's full name, `command|arg`, or
    /// `@category`), in lowercase, goes to the end of the retained rules, and any earlier rule
    /// for the same name (or for a subcommand of it) leaves them.
    fn retain_rule(&mut self, rule: &str, allow: bool) {
        let rule = rule.to_ascii_lowercase();
        let kept: Vec<&str> = self
            .rules
            .split(' ')
            .filter(|r| {
                let name = r.get(1..).unwrap_or("");
                !(name == rule
                    || name.len() > rule.len()
                        && name.starts_with(&rule)
                        && name.as_bytes()[rule.len()] == b'|')
            })
            .filter(|r| !r.is_empty())
            .collect();
        let mut rules = kept.join(" ");
        if !rules.is_empty() {
            rules.push(' ');
        }
        rules.push(if allow { '+' } else { '-' });
        rules.push_str(&rule);
        self.rules = rules;
    }

    /// The command rules that describe this selector: Redis 7.0's computed form, or, where the
    /// server keeps the rules as given (`retained`: Redis 7.2 and later, Valkey), `+@all` or
    /// `-@all` and then those rules.
    pub fn describe_commands_as(&self, retained: bool) -> String {
        if !retained {
            return self.describe_commands();
        }
        let mut out = String::from(if self.allowed.get(table().future_bit()) {
            "+@all"
        } else {
            "-@all"
        });
        if !self.rules.is_empty() {
            out.push(' ');
            out.push_str(&self.rules);
        }
        out
    }

    /// The command rules that give this selector's permissions, as Redis 7.0's
    /// `ACLDescribeSelectorCommandRules` writes them (see the [module docs](self)).
    pub fn describe_commands(&self) -> String {
        let t = table();
        let additive = !self.allowed.get(t.future_bit());
        let mut rules = String::from(if additive { "-@all " } else { "+@all " });
        let mut fake = Selector::new(false);
        if !additive {
            fake.allowed = Bits::all();
        }
        // The categories, best fit first, each applied once: `temp` is what is left to explain.
        let mut temp = self.clone();
        let mut applied = [false; CATEGORIES.len()];
        loop {
            let mut best = None;
            let (mut min_diff, mut max_same) = (u64::MAX, 0);
            for (j, _) in CATEGORIES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = temp.count_category(1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                    best = Some(j);
                    min_diff = diff;
                    max_same = same;
                }
            }
            let Some(best) = best else { break };
            fake.change_category(1 << best, additive);
            temp.change_category(1 << best, !additive);
            rules.push_str(if additive { "+@" } else { "-@" });
            rules.push_str(CATEGORIES[best]);
            rules.push(' ');
            applied[best] = true;
        }
        for &id in &t.top_level {
            self.describe_single(id, &mut fake, &mut rules);
        }
        rules.pop();
        rules
    }

    /// How many commands and subcommands of `category` this selector allows, and how many not.
    fn count_category(&self, category: u32) -> (u64, u64) {
        let t = table();
        let (mut on, mut off) = (0, 0);
        for command in t.commands.iter().enumerate() {
            if command.1.categories & category != 0 {
                if self.allowed.get(command.0) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// The single-command rules for `id` and its subcommands that bring `fake` to this
    /// selector's bits, then the command's allowed first arguments.
    fn describe_single(&self, id: usize, fake: &mut Selector, rules: &mut String) {
        let command = &table().commands[id];
        let mine = self.allowed.get(id);
        if mine != fake.allowed.get(id) {
            rules.push(if mine { '+' } else { '-' });
            rules.push_str(&command.name);
            rules.push(' ');
            fake.change(id, mine);
        }
        for &sub in &command.subcommands {
            self.describe_single(sub, fake, rules);
        }
        if !mine && let Some(args) = self.first_args.get(&id) {
            for arg in args {
                rules.push('+');
                rules.push_str(&command.name);
                rules.push('|');
                rules.push_str(&String::from_utf8_lossy(arg));
                rules.push(' ');
            }
        }
    }

    /// `ACL GETUSER`'s `keys`: `~*`, or the patterns.
    pub fn keys_text(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, key) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            key.describe(&mut out);
        }
        out
    }

    /// `ACL GETUSER`'s `channels`: `&*`, or the patterns.
    pub fn channels_text(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, channel) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(channel);
        }
        out
    }

    /// Redis's `ACLDescribeSelector`, for `ACL LIST`.
    fn describe(&self, out: &mut Vec<u8>, retained: bool) {
        if self.all_keys {
            out.extend_from_slice(b"~* ");
        } else {
            for key in &self.keys {
                key.describe(out);
                out.push(b' ');
            }
        }
        if self.all_channels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for channel in &self.channels {
                out.push(b'&');
                out.extend_from_slice(channel);
                out.push(b' ');
            }
        }
        out.extend_from_slice(self.describe_commands_as(retained).as_bytes());
    }
}

impl User {
    /// A user as `ACL SETUSER` creates it: off, no password, no permission (but every channel
    /// when `all_channels`, `acl-pubsub-default allchannels`), with `sanitize-payload` where the
    /// server sets it on every new user (`sanitize`).
    pub fn new(all_channels: bool, sanitize: bool) -> User {
        User {
            enabled: false,
            nopass: false,
            sanitize: sanitize.then_some(true),
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
        }
    }

    /// The `default` user of a server started with `requirepass` (or without: `nopass`).
    pub fn default_user(password: Option<&[u8]>, sanitize: bool) -> User {
        let mut user = User {
            enabled: true,
            selectors: vec![Selector::everything()],
            ..User::new(false, sanitize)
        };
        user.set_password(password);
        user
    }

    /// What `CONFIG SET requirepass` does to the `default` user (Redis's
    /// `ACLUpdateDefaultUserPassword`): its passwords replaced by this one, or `nopass`.
    pub fn set_password(&mut self, password: Option<&[u8]>) {
        self.passwords.clear();
        match password {
            Some(p) if !p.is_empty() => {
                self.nopass = false;
                self.passwords.push(hash_password(p));
            }
            _ => self.nopass = true,
        }
    }

    /// Whether `password` authenticates it (Redis's `ACLCheckUserCredentials`).
    pub fn accepts(&self, password: &[u8]) -> bool {
        self.enabled && (self.nopass || self.passwords.contains(&hash_password(password)))
    }

    /// Its flags, in Redis's order. Valkey takes the payload flags and never lists them.
    pub fn flags(&self, version: Version) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        match self.sanitize.filter(|_| !version.is_valkey()) {
            Some(false) => flags.push("skip-sanitize-payload"),
            Some(true) => flags.push("sanitize-payload"),
            None => {}
        }
        flags
    }

    /// Redis's `ACLSetUser`: one rule. `all_channels` is `acl-pubsub-default allchannels`, which
    /// `reset` and a new selector start from.
    pub fn apply(&mut self, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        if is(op, "on") {
            self.enabled = true;
        } else if is(op, "off") {
            self.enabled = false;
        } else if is(op, "skip-sanitize-payload") {
            self.sanitize = Some(false);
        } else if is(op, "sanitize-payload") {
            self.sanitize = Some(true);
        } else if is(op, "nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is(op, "resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if is(op, "reset") {
            let channels: &[u8] = match all_channels {
                true => b"allchannels",
                false => b"resetchannels",
            };
            for rule in [
                &b"resetpass"[..],
                b"resetkeys",
                b"resetchannels",
                channels,
                b"off",
                b"sanitize-payload",
                b"clearselectors",
                b"-@all",
            ] {
                self.apply(rule, all_channels)?;
            }
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                checked_hash(&op[1..])?
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                checked_hash(&op[1..])?
            };
            let at = self
                .passwords
                .iter()
                .position(|p| *p == hash)
                .ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut selector = Selector::new(all_channels);
            for rule in split_args(&op[1..op.len() - 1]) {
                selector.apply(&rule)?;
            }
            self.selectors.push(selector);
        } else if is(op, "clearselectors") {
            self.selectors.truncate(1);
        } else {
            self.selectors[0].apply(op)?;
        }
        Ok(())
    }

    /// Redis's `ACLDescribeUser`, for `ACL LIST` (after `user <name> `), as `version` writes it.
    pub fn describe(&self, version: Version) -> Vec<u8> {
        let retained = version.retains_acl_rules();
        let mut out = Vec::new();
        for flag in self.flags(version) {
            out.extend_from_slice(flag.as_bytes());
            out.push(b' ');
        }
        for password in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(password.as_bytes());
            out.push(b' ');
        }
        for (i, selector) in self.selectors.iter().enumerate() {
            if i == 0 {
                selector.describe(&mut out, retained);
            } else {
                out.extend_from_slice(b" (");
                selector.describe(&mut out, retained);
                out.push(b')');
            }
        }
        out
    }
}

/// A password as Redis keeps it: its SHA-256 in lowercase hex.
pub(crate) fn hash_password(password: &[u8]) -> String {
    super::sha256(password)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A `#hash` or `!hash` rule's hash: 64 lowercase hex digits.
fn checked_hash(hash: &[u8]) -> Result<String, RuleError> {
    let valid = hash.len() == 64
        && hash
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    if valid {
        Ok(String::from_utf8_lossy(hash).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

/// The rules inside a selector's parentheses, split as Redis's `sdssplitargs` splits them:
/// at spaces, with double quotes (and their escapes) and single quotes grouping. Unbalanced
/// quotes give no rules at all, as `sdssplitargs` then fails.
fn split_args(text: &[u8]) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < text.len() && has_spaces(&text[i..=i]) && text[i] != 0 {
            i += 1;
        }
        if i >= text.len() {
            return args;
        }
        let mut arg = Vec::new();
        let (mut in_double, mut in_single) = (false, false);
        loop {
            let Some(&c) = text.get(i) else {
                if in_double || in_single {
                    return Vec::new();
                }
                break;
            };
            if in_double {
                if c == b'\\' && i + 1 < text.len() {
                    i += 1;
                    arg.push(match text[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    // A closing quote must be followed by a space or the end.
                    if text
                        .get(i + 1)
                        .is_some_and(|&n| !has_spaces(&[n]) || n == 0)
                    {
                        return Vec::new();
                    }
                    i += 1;
                    break;
                } else {
                    arg.push(c);
                }
            } else if in_single {
                if c == b'\\' && text.get(i + 1) == Some(&b'\'') {
                    i += 1;
                    arg.push(b'\'');
                } else if c == b'\'' {
                    if text
                        .get(i + 1)
                        .is_some_and(|&n| !has_spaces(&[n]) || n == 0)
                    {
                        return Vec::new();
                    }
                    i += 1;
                    break;
                } else {
                    arg.push(c);
                }
            } else if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' || c == 0 {
                break;
            } else if c == b'"' {
                in_double = true;
            } else if c == b'\'' {
                in_single = true;
            } else {
                arg.push(c);
            }
            i += 1;
        }
        args.push(arg);
    }
}

impl Users {
    /// A server's users at start: `default` alone, with `requirepass` as its password.
    pub fn new(requirepass: Option<&[u8]>, sanitize: bool) -> Users {
        let mut users = BTreeMap::new();
        users.insert(
            Bytes::from_static(b"default"),
            User::default_user(requirepass, sanitize),
        );
        Users { users, open: true }
    }

    /// `CONFIG SET requirepass`: the `default` user's password.
    pub fn set_default_password(&mut self, password: Option<&[u8]>) {
        if let Some(default) = self.users.get_mut(&b"default"[..]) {
            default.set_password(password);
        }
    }
}
