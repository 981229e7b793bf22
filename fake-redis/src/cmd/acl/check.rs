//! Whether a user may run a call: Redis 7.0's `ACLCheckAllUserCommandPerm`, selector by
//! selector, and the texts each door gives a refusal.
//!
//! A selector allows a call when it allows the command (its bit, or the call's first argument
//! for a `+command|arg` rule; commands that run before authentication are never refused), every
//! key the call names with the access it needs (the keys and their flags come from the command's
//! key specs in Redis's table, as `getKeysFromCommandWithSpecs` finds them: `access` needs a
//! readable pattern, `insert`, `delete` and `update` a writable one), and every channel it
//! publishes or subscribes to (a `PSUBSCRIBE` pattern must be one of the user's patterns
//! literally). When no selector allows it, the refusal reported is the command when no selector
//! allowed the command, else the last key or channel refused.

use super::table::table;
use super::user::{Selector, User};
use crate::cmd::command_docs::keys_and_flags;
use crate::engine::glob::glob_match;
use crate::resp::Frame;
use bytes::Bytes;

/// Why a call is refused (Redis's `ACL_DENIED_*`), with the argument at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    /// Redis's `ACL_DENIED_*` value, which orders the reasons.
    fn rank(self) -> u8 {
        match self {
            Denied::Command => 1,
            Denied::Key(_) => 2,
            Denied::Channel(_) => 4,
        }
    }

    /// `ACL LOG`'s `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key(_) => "key",
            Denied::Channel(_) => "channel",
        }
    }

    /// `ACL LOG`'s `object`: the command's full name, or the key or channel refused.
    pub fn object(self, name: &str, argv: &[Bytes]) -> Bytes {
        match self {
            Denied::Command => Bytes::copy_from_slice(name.as_bytes()),
            Denied::Key(at) | Denied::Channel(at) => argv[at].clone(),
        }
    }

    /// The error a client's own call gets (Redis's `processCommand`).
    pub fn error(self, name: &str) -> Frame {
        match self {
            Denied::Command => Frame::error_owned(format!(
                "NOPERM this user has no permissions to run the '{name}' command"
            )),
            Denied::Key(_) => Frame::error(
                "NOPERM this user has no permissions to access one of the keys used as arguments",
            ),
            Denied::Channel(_) => Frame::error(
                "NOPERM this user has no permissions to access one of the channels used as \
                 arguments",
            ),
        }
    }

    /// The reply of a queued command that the user may no longer run when `EXEC` runs it.
    pub fn exec_error(self) -> Frame {
        let reason = match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        Frame::error_owned(format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and \
             the EXEC call. This command is no longer allowed for the following reason: {reason}"
        ))
    }

    /// The error a script's `redis.call` raises.
    pub fn script_error(self) -> &'static str {
        match self {
            Denied::Command => {
                "ERR The user executing the script can't run this command or subcommand"
            }
            Denied::Key(_) => {
                "ERR The user executing the script can't access at least one of the keys \
                 mentioned in the command arguments"
            }
            Denied::Channel(_) => {
                "ERR The user executing the script can't publish to the channel mentioned in the \
                 command"
            }
        }
    }

    /// `ACL DRYRUN`'s answer (Redis's verbose `getAclErrorMessage`).
    pub fn dry_run_text(self, name: &str, argv: &[Bytes]) -> Vec<u8> {
        match self {
            Denied::Command => {
                format!("This user has no permissions to run the '{name}' command").into_bytes()
            }
            Denied::Key(at) => [
                &b"This user has no permissions to access the '"[..],
                &argv[at],
                b"' key",
            ]
            .concat(),
            Denied::Channel(at) => [
                &b"This user has no permissions to access the '"[..],
                &argv[at],
                b"' channel",
            ]
            .concat(),
        }
    }
}

/// Whether `user` may run `argv`, a call of the command named `name` in full (`get`,
/// `config|get`).
pub(crate) fn check(user: &User, name: &str, argv: &[Bytes]) -> Result<(), Denied> {
    let id = table().id(name.as_bytes());
    let mut keys = None;
    let mut relevant = Denied::Command;
    for selector in &user.selectors {
        match check_selector(selector, id, argv, &mut keys) {
            Ok(()) => return Ok(()),
            Err(denied) => {
                if denied.rank() > relevant.rank()
                    || (denied.rank() == relevant.rank() && denied != Denied::Command)
                {
                    relevant = denied;
                }
            }
        }
    }
    Err(relevant)
}

/// A call's keys, each with its flags (`access`, `update`, ...).
type CallKeys = Vec<(usize, Vec<Vec<u8>>)>;

/// One selector's verdict. `keys` caches the call's keys and flags across selectors.
fn check_selector(
    selector: &Selector,
    id: Option<usize>,
    argv: &[Bytes],
    keys: &mut Option<CallKeys>,
) -> Result<(), Denied> {
    let t = table();
    let command = id.map(|id| &t.commands[id]);
    if !selector.all_commands && !command.is_some_and(|c| c.no_auth) {
        let allowed = id.is_some_and(|id| selector.allowed.get(id));
        let first_arg = argv.get(1).is_some_and(|arg| {
            id.and_then(|id| selector.first_args.get(&id))
                .is_some_and(|args| args.iter().any(|a| a.eq_ignore_ascii_case(arg)))
        });
        if !allowed && !first_arg {
            return Err(Denied::Command);
        }
    }
    if !selector.all_keys
        && let Some(command) = command
    {
        let keys = keys.get_or_insert_with(|| keys_and_flags(command.entry, argv));
        for (at, flags) in keys.iter() {
            let has = |f: &[u8]| flags.iter().any(|x| x == f);
            let read = has(b"access");
            let write = has(b"insert") || has(b"delete") || has(b"update");
            let allowed = selector.keys.iter().any(|p| {
                (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, &argv[*at])
            });
            if !allowed {
                return Err(Denied::Key(*at));
            }
        }
    }
    if !selector.all_channels
        && let Some(command) = command
    {
        let (positions, pattern) = channels(&command.name, argv.len());
        for at in positions {
            let channel = &argv[at];
            let allowed = selector.channels.iter().any(|c| {
                if pattern {
                    c == channel
                } else {
                    glob_match(c, channel)
                }
            });
            if !allowed {
                return Err(Denied::Channel(at));
            }
        }
    }
    Ok(())
}

/// The positions of the channels a call of `name` with `argc` arguments publishes or subscribes
/// to, and whether they are patterns (Redis's `getChannelsFromCommand`; unsubscribing is never
/// refused).
fn channels(name: &str, argc: usize) -> (std::ops::Range<usize>, bool) {
    match name {
        "publish" | "spublish" => (1..2.min(argc), false),
        "subscribe" | "ssubscribe" => (1..argc, false),
        "psubscribe" => (1..argc, true),
        _ => (0..0, false),
    }
}
