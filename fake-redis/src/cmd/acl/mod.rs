//! `ACL`: users with passwords, command and category rules, key and channel patterns, and the
//! permission check every call passes, as Redis 7.0.15 has them.
//!
//! The folder splits what Redis's `acl.c` does: `table.rs` numbers the commands rules name
//! (Redis's own table, so categories mean what they mean there), `user.rs` applies rules to
//! users and describes them back (`ACL SETUSER`, `ACL LIST`, `ACL GETUSER`), `check.rs` decides
//! whether a user may run a call and words the refusal for each door. The users and `ACL LOG`
//! are the engine's state (`engine/acl/`). This
//! file has the `ACL` command, authentication (`AUTH`, `HELLO AUTH`), and [`check_call`], which
//! dispatch runs for every call when any user may be refused something; while the `default`
//! user is the only one and may run everything ([`Users::is_open`]), nothing is checked.
//!
//! `requirepass` is the `default` user's password, as in Redis: `CONFIG SET requirepass` replaces
//! its passwords (or makes it `nopass`), and a connection must authenticate when that user needs
//! a password or is off. A user removed by `ACL DELUSER` takes its connections with it, and
//! `ACL SETUSER` closes the connections of the user that are subscribed to a channel the user may
//! no longer reach. Users live as long as the server process: a restart starts from `default`,
//! as a Redis without an ACL file does.

mod check;
mod table;
mod user;

use super::server::{help_reply, subcommand};
use super::{Args, CONTAINER, CmdResult, Cx, Spec, c_text, error_echoing, int, is};
use crate::engine::acl::{Acl, log};
use crate::engine::{Engine, Subscription, Version};
use crate::resp::Frame;
use bytes::Bytes;
pub(crate) use check::Denied;
pub(crate) use log::Context;
use table::CATEGORIES;
use user::{User, Users, has_spaces};

pub(crate) static ACL: Spec = Spec::new("acl", -2, CONTAINER, acl_command);

impl Acl {
    /// The state of a server started with `requirepass` (or without).
    pub fn new(requirepass: Option<&[u8]>, version: Version) -> Acl {
        Acl {
            users: Users::new(requirepass, version.sanitizes_new_users()),
            log: log::Log::default(),
        }
    }
}

const ACL_HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

const NO_ACL_FILE: Frame = Frame::error(
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify \
     users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a \
     Redis configuration file set) in order to store users in the Redis configuration.",
);

fn bulk(text: &'static str) -> Frame {
    Frame::Bulk(Bytes::from_static(text.as_bytes()))
}

/// Redis's `ACLCheckAllPerm` for client `id`'s call `argv` of the command named `name` in full,
/// made at `now`: a refusal is logged in `context` (its `CLIENT LIST` line naming `running`).
/// Dispatch calls it only while the users are not [open](Users::is_open).
pub(crate) fn check_call(
    engine: &mut Engine,
    id: u64,
    name: &str,
    running: &str,
    argv: &[Bytes],
    context: Context,
    now: i64,
) -> Result<(), Denied> {
    let Some(client) = engine.client(id) else {
        return Ok(());
    };
    let username = client.user.clone();
    let Some(user) = engine.acl().users.get(&username) else {
        return Ok(());
    };
    let denied = check::check(user, name, argv).err();
    if let Some(denied) = denied {
        let entry = log::Entry::new(
            denied.reason(),
            context,
            denied.object(name, argv),
            username,
            now,
        );
        add_log_entry(engine, id, running, entry);
        return Err(denied);
    }
    Ok(())
}

/// Whether client `id` may run every command on every key and channel, so no call of its needs a
/// check.
pub(crate) fn may_run_everything(engine: &Engine, id: u64) -> bool {
    let users = &engine.acl().users;
    users.is_open()
        || engine
            .client(id)
            .and_then(|c| users.get(&c.user))
            .is_some_and(|u| u.selectors.len() == 1 && u.allows_everything())
}

/// Whether the client running a script may call the command named `name` in full with `argv`
/// (`redis.acl_check_cmd`): the check of its `redis.call`, without the `ACL LOG` entry a refusal
/// adds there.
pub(crate) fn script_may_call(cx: &mut Cx<'_>, name: &str, argv: &[Bytes]) -> bool {
    let engine = cx.engine();
    if engine.acl().users.is_open() {
        return true;
    }
    let Some(client) = engine.client(cx.client) else {
        return true;
    };
    engine
        .acl()
        .users
        .get(&client.user)
        .is_none_or(|user| check::check(user, name, argv).is_ok())
}

/// The ACL check of a script's `redis.call` of the command named `name` in full: the error it
/// raises when the user running the script may not make it (logged in the `lua` context).
pub(crate) fn check_script_call(
    cx: &mut Cx<'_>,
    name: &str,
    argv: &[Bytes],
) -> Result<(), &'static str> {
    if cx.engine().acl().users.is_open() {
        return Ok(());
    }
    let (id, now) = (cx.client, cx.now);
    let running = cx.client().last_command;
    check_call(cx.node(), id, name, running, argv, Context::Lua, now).map_err(Denied::script_error)
}

/// Adds `entry` to the `ACL LOG`, with the `CLIENT LIST` line of client `id` running `running`.
fn add_log_entry(engine: &mut Engine, id: u64, running: &str, mut entry: log::Entry) {
    let line = engine.client(id).map_or_else(String::new, |c| {
        let outbox = engine.outbox_len(crate::engine::ClientId(id));
        super::connection::client_line(entry.at, id, c, running, (outbox, engine.version()))
    });
    entry.client_info = Bytes::from(line.trim_end_matches('\n').to_owned());
    let max_len = engine
        .config()
        .settings
        .get("acllog-max-len")
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    engine.acl_mut().log.add(entry, max_len);
}

/// Authenticates the calling client as `name` with `password` (`AUTH`, `HELLO AUTH`, sent as
/// `command`): Redis's `ACLAuthenticateUser`. A refusal is `WRONGPASS` and an `ACL LOG` entry.
pub(crate) fn authenticate(
    cx: &mut Cx<'_>,
    name: &Bytes,
    password: &[u8],
    command: &Bytes,
) -> Result<(), Frame> {
    let accepted = cx
        .engine()
        .acl()
        .users
        .get(name)
        .is_some_and(|u| u.accepts(password));
    if accepted {
        let client = cx.client();
        client.authenticated = true;
        client.user = name.clone();
        return Ok(());
    }
    let context = match cx.caller {
        super::Caller::Transaction => Context::Multi,
        _ => Context::TopLevel,
    };
    let (id, now) = (cx.client, cx.now);
    let running = cx.client().last_command;
    let entry = log::Entry::new("auth", context, command.clone(), name.clone(), now);
    add_log_entry(cx.node(), id, running, entry);
    Err(Frame::error(
        "WRONGPASS invalid username-password pair or user is disabled.",
    ))
}

/// `ERR User '<name>' not found`.
fn no_such_user(name: &[u8]) -> Frame {
    error_echoing(&[b"ERR User '", c_text(name, usize::MAX), b"' not found"])
}

fn acl_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = subcommand(
        "ACL",
        &[
            "cat", "deluser", "dryrun", "getuser", "genpass", "list", "load", "log", "save",
            "setuser", "users", "whoami", "help",
        ],
        sub,
    )?;
    // CAT, GENPASS and LOG take one optional argument, which Redis counts in the handler.
    if matches!(name, "cat" | "genpass" | "log") && args.remaining() > 1 {
        return Err(super::subcommand_syntax("ACL", sub));
    }
    match name {
        "help" => Ok(help_reply(ACL_HELP)),
        "whoami" => Ok(Frame::Bulk(cx.client().user.clone())),
        "users" => Ok(Frame::Array(
            cx.engine()
                .acl()
                .users
                .iter()
                .map(|(name, _)| Frame::Bulk(name.clone()))
                .collect(),
        )),
        "list" => {
            let version = cx.engine().config().version;
            Ok(Frame::Array(
                cx.engine()
                    .acl()
                    .users
                    .iter()
                    .map(|(name, user)| {
                        Frame::Bulk(Bytes::from(
                            [&b"user "[..], name, b" ", &user.describe(version)].concat(),
                        ))
                    })
                    .collect(),
            ))
        }
        "getuser" => {
            let name = args.next_bytes()?;
            let version = cx.engine().config().version;
            Ok(cx
                .engine()
                .acl()
                .users
                .get(name)
                .map_or(Frame::Null, |user| get_user(user, version)))
        }
        "setuser" => set_user(cx, args),
        "deluser" => del_user(cx, args),
        "cat" => match args.next() {
            None => Ok(Frame::Array(CATEGORIES.iter().map(|c| bulk(c)).collect())),
            Some(category) => {
                let Some(category) = CATEGORIES.iter().find(|c| is(category, c)) else {
                    return Err(error_echoing(&[
                        b"ERR Unknown category '",
                        c_text(category, 128),
                        b"'",
                    ]));
                };
                let argv = [
                    Bytes::from_static(b"command"),
                    Bytes::from_static(b"filterby"),
                    Bytes::from_static(b"aclcat"),
                    Bytes::from_static(category.as_bytes()),
                ];
                let mut list = Args::new(&argv);
                super::command_docs::list(cx.engine().version(), &mut list)
            }
        },
        "genpass" => {
            let bits = match args.next() {
                None => 256,
                Some(b) => int(b)?,
            };
            if !(1..=4096).contains(&bits) {
                return Err(Frame::error(
                    "ERR ACL GENPASS argument must be the number of bits for the output \
                     password, a positive number up to 4096",
                ));
            }
            // From the engine's seeded generator: reproducible, which a fake wants, and no
            // secret, which a fake does not need.
            let digits = (bits as usize).div_ceil(4);
            let mut out = String::with_capacity(digits);
            while out.len() < digits {
                let word = cx.random();
                for shift in (0..16).rev() {
                    if out.len() < digits {
                        out.push(char::from(
                            b"0123456789abcdef"[(word >> (shift * 4)) as usize & 15],
                        ));
                    }
                }
            }
            Ok(Frame::Bulk(Bytes::from(out)))
        }
        "log" => {
            let count = match args.next() {
                None => 10,
                Some(a) if is(a, "reset") => {
                    cx.acl_mut().log.reset();
                    return Ok(Frame::OK);
                }
                Some(a) => int(a)?.max(0) as usize,
            };
            Ok(cx.engine().acl().log.reply(count, cx.now))
        }
        "dryrun" => dry_run(cx, args),
        "save" | "load" => Err(NO_ACL_FILE),
        _ => Err(super::unknown_subcommand("ACL", sub)),
    }
}

/// `ACL GETUSER`'s reply for `user`.
fn get_user(user: &User, version: Version) -> Frame {
    let text = |t: Vec<u8>| Frame::Bulk(Bytes::from(t));
    let describe = |s: &user::Selector| {
        let mut fields = vec![
            (
                bulk("commands"),
                text(
                    s.describe_commands_as(version.retains_acl_rules())
                        .into_bytes(),
                ),
            ),
            (bulk("keys"), text(s.keys_text())),
            (bulk("channels"), text(s.channels_text())),
        ];
        if version.is_valkey() {
            // Valkey 9's database permissions: the fake has no rule that narrows them.
            fields.push((bulk("databases"), bulk("alldbs")));
        }
        fields
    };
    let mut fields = vec![
        (
            bulk("flags"),
            Frame::Set(user.flags(version).into_iter().map(bulk).collect()),
        ),
        (
            bulk("passwords"),
            Frame::Array(
                user.passwords
                    .iter()
                    .map(|p| Frame::Bulk(Bytes::from(p.clone())))
                    .collect(),
            ),
        ),
    ];
    fields.extend(describe(user.root()));
    fields.push((
        bulk("selectors"),
        Frame::Array(
            user.selectors[1..]
                .iter()
                .map(|s| Frame::Map(describe(s)))
                .collect(),
        ),
    ));
    Frame::Map(fields)
}

/// `ACL SETUSER name rule...`: every rule applies, or none does.
fn set_user(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.next_bytes()?.clone();
    if has_spaces(&name) {
        return Err(Frame::error(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let rules = merge_selectors(args.rest())?;
    let all_channels = cx
        .engine()
        .config()
        .settings
        .get("acl-pubsub-default")
        .is_some_and(|v| v.eq_ignore_ascii_case("allchannels"));
    let original = cx.engine().acl().users.get(&name).cloned();
    let sanitize = cx.engine().config().version.sanitizes_new_users();
    let mut user = original
        .clone()
        .unwrap_or_else(|| User::new(all_channels, sanitize));
    for rule in &rules {
        user.apply(rule, all_channels).map_err(|e| {
            error_echoing(&[
                b"ERR Error in ACL SETUSER modifier '",
                c_text(rule, usize::MAX),
                b"': ",
                e.text().as_bytes(),
            ])
        })?;
    }
    if let Some(original) = &original {
        close_revoked_subscribers(cx, &name, original, &user);
    }
    cx.acl_mut().users.insert(name, user);
    Ok(Frame::OK)
}

/// Joins a selector written over several arguments (`(~key*`, `+get)`) into one rule, as Redis's
/// `ACLMergeSelectorArguments` does.
fn merge_selectors(argv: &[Bytes]) -> Result<Vec<Vec<u8>>, Frame> {
    let mut rules = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (j, rule) in argv.iter().enumerate() {
        if rule.first() == Some(&b'(') && rule.last() != Some(&b')') {
            open = Some((j, rule.to_vec()));
            continue;
        }
        if let Some((_, selector)) = &mut open {
            selector.push(b' ');
            selector.extend_from_slice(rule);
            if rule.last() == Some(&b')') {
                rules.extend(open.take().map(|(_, s)| s));
            }
            continue;
        }
        rules.push(rule.to_vec());
    }
    match open {
        None => Ok(rules),
        Some((j, _)) => Err(error_echoing(&[
            b"ERR Unmatched parenthesis in acl selector starting at '",
            c_text(&argv[j], usize::MAX),
            b"'.",
        ])),
    }
}

/// Redis 7.0's `ACLKillPubsubClientsIfNeeded`: when `user` (named `name`, `original` before the
/// change) may reach fewer channels, its connections subscribed to a channel or pattern it may no
/// longer reach are closed.
fn close_revoked_subscribers(cx: &mut Cx<'_>, name: &[u8], original: &User, user: &User) {
    if user.selectors.iter().any(|s| s.all_channels) {
        return;
    }
    let upcoming: Vec<&Bytes> = user.selectors.iter().flat_map(|s| &s.channels).collect();
    let kept = original
        .selectors
        .iter()
        .all(|s| !s.all_channels && s.channels.iter().all(|c| upcoming.contains(&c)));
    if kept {
        return;
    }
    let reaches = |channel: &[u8]| {
        upcoming
            .iter()
            .any(|p| crate::engine::glob::glob_match(p, channel))
    };
    let engine = cx.engine();
    let doomed: Vec<u64> = engine
        .clients()
        .filter(|(_, c)| &c.user[..] == name && c.is_subscriber())
        .map(|(id, _)| id)
        .filter(|&id| {
            engine
                .subscriptions_of(id, Subscription::Pattern)
                .iter()
                .any(|p| !upcoming.contains(&p))
                || engine
                    .subscriptions_of(id, Subscription::Channel)
                    .iter()
                    .chain(&engine.subscriptions_of(id, Subscription::Shard))
                    .any(|c| !reaches(c))
        })
        .collect();
    for id in doomed {
        cx.kill_client(id);
    }
}

/// `ACL DELUSER name...`: how many were removed; their connections close (the caller's once
/// this reply is out).
fn del_user(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let names = args.rest();
    if names.iter().any(|n| &n[..] == b"default") {
        return Err(Frame::error("ERR The 'default' user cannot be removed"));
    }
    let mut deleted = 0;
    for name in names {
        if !cx.acl_mut().users.remove(name) {
            continue;
        }
        deleted += 1;
        let doomed: Vec<u64> = cx
            .engine()
            .clients()
            .filter(|(_, c)| c.user == name)
            .map(|(id, _)| id)
            .collect();
        for id in doomed {
            cx.kill_client(id);
        }
    }
    Ok(Frame::Integer(deleted))
}

/// `ACL DRYRUN user command arg...`: `OK`, or why the user may not run it.
fn dry_run(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.next_bytes()?;
    let Some(user) = cx.engine().acl().users.get(name) else {
        return Err(no_such_user(name));
    };
    let argv = args.rest();
    let not_found = || error_echoing(&[b"ERR Command '", c_text(&argv[0], 128), b"' not found"]);
    let version = cx.engine().version();
    let spec = super::lookup_in(version, &argv[0]).ok_or_else(not_found)?;
    if !spec.arity_ok(argv.len()) {
        return Err(super::wrong_arity(spec.name));
    }
    let full_name = match super::command_name(version, spec, argv) {
        Ok(full_name) => full_name,
        Err(super::Refusal::Unknown) => return Err(not_found()),
        Err(super::Refusal::Arity(name)) => return Err(super::wrong_arity(name)),
    };
    match check::check(user, full_name, argv) {
        Ok(()) => Ok(Frame::OK),
        Err(denied) => Ok(Frame::Bulk(Bytes::from(
            denied.dry_run_text(full_name, argv),
        ))),
    }
}

/// SHA-256 of `data` (FIPS 180-4), for the password hashes `ACL LIST` shows.
fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut message = data.to_vec();
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in message.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let choice = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(choice)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let majority = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(majority);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::sha256;

    #[test]
    fn sha256_is_fips_180_4_s() {
        let hex = |d: [u8; 32]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
