//! `ACL` as a server without ACL rules answers it: one user, `default`, who may run every
//! command on every key and channel, with `requirepass` as its password.
//!
//! Test suites and clients ask `ACL WHOAMI`, `ACL USERS`, `ACL LIST`, `ACL GETUSER default`
//! and `ACL CAT` before they use the server, and a client that authenticates with a user name
//! (`AUTH default <password>`, `HELLO 3 AUTH default <password>`) needs the `default` user to
//! exist; those replies are Redis 7.0's, byte for byte. Users of their own (`ACL SETUSER`) and the
//! permission checks they bring are not here yet: `SETUSER` is refused with an error that says
//! so, `DELUSER` removes nobody (it refuses `default` as Redis does), and the README lists them
//! among the differences.

use super::server::{help_reply, subcommand};
use super::{Args, CONTAINER, Cx, Reply, Spec, int, is};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static ACL: Spec = Spec::new("acl", -2, CONTAINER, acl_command);

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

/// Redis 7.0's command categories, in its order (`ACL CAT`).
const CATEGORIES: &[&str] = &[
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

const NO_ACL_FILE: Frame = Frame::error(
    "ERR This Redis instance is not configured to use an ACL file. You may want to specify \
     users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a \
     Redis configuration file set) in order to store users in the Redis configuration.",
);

fn bulk(text: &'static str) -> Frame {
    Frame::Bulk(Bytes::from_static(text.as_bytes()))
}

/// `ERR User '<name>' not found` unless `name` is `default`.
fn known_user(name: &[u8]) -> Result<(), Frame> {
    if name == b"default" {
        Ok(())
    } else {
        Err(super::error_echoing(&[
            b"ERR User '",
            super::c_text(name, 128),
            b"' not found",
        ]))
    }
}

/// The `default` user's password as `ACL LIST` and `GETUSER` show it: its SHA-256 in hex.
fn password_hash(cx: &Cx<'_>) -> Option<String> {
    let password = cx.engine().config().requirepass.as_ref()?;
    Some(
        sha256(password)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

fn acl_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
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
        "whoami" => Ok(bulk("default")),
        "users" => Ok(Frame::Array(vec![bulk("default")])),
        "list" => {
            let password =
                password_hash(cx).map_or_else(|| "nopass".to_owned(), |h| format!("#{h}"));
            Ok(Frame::Array(vec![Frame::Bulk(Bytes::from(format!(
                "user default on {password} ~* &* +@all"
            )))]))
        }
        "getuser" => {
            let user = args.next_bytes()?;
            if &user[..] != b"default" {
                return Ok(Frame::Null);
            }
            let hash = password_hash(cx);
            let mut flags = vec![bulk("on")];
            if hash.is_none() {
                flags.push(bulk("nopass"));
            }
            let passwords = hash
                .into_iter()
                .map(|h| Frame::Bulk(Bytes::from(h)))
                .collect();
            Ok(Frame::Map(vec![
                (bulk("flags"), Frame::Set(flags)),
                (bulk("passwords"), Frame::Array(passwords)),
                (bulk("commands"), bulk("+@all")),
                (bulk("keys"), bulk("~*")),
                (bulk("channels"), bulk("&*")),
                (bulk("selectors"), Frame::Array(Vec::new())),
            ]))
        }
        "cat" => match args.next() {
            None => Ok(Frame::Array(CATEGORIES.iter().map(|c| bulk(c)).collect())),
            Some(category) => {
                let Some(category) = CATEGORIES.iter().find(|c| is(category, c)) else {
                    return Err(super::error_echoing(&[
                        b"ERR Unknown category '",
                        super::c_text(category, 128),
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
                super::command_docs::list(&mut list)
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
        "log" => match args.next() {
            None => Ok(Frame::Array(Vec::new())),
            Some(a) if is(a, "reset") => Ok(Frame::OK),
            Some(a) => {
                int(a)?;
                Ok(Frame::Array(Vec::new()))
            }
        },
        "dryrun" => {
            known_user(args.next_bytes()?)?;
            let argv = args.rest();
            let not_found = || {
                super::error_echoing(&[
                    b"ERR Command '",
                    super::c_text(&argv[0], 128),
                    b"' not found",
                ])
            };
            let spec = super::lookup(&argv[0]).ok_or_else(not_found)?;
            if !spec.arity_ok(argv.len()) {
                return Err(super::wrong_arity(spec.name));
            }
            match super::command_name(spec, argv) {
                Ok(_) => Ok(Frame::OK),
                Err(super::Refusal::Unknown) => Err(not_found()),
                Err(super::Refusal::Arity(name)) => Err(super::wrong_arity(name)),
            }
        }
        "deluser" => {
            // Only `default` exists, and Redis never removes it.
            if args.any(|user| &user[..] == b"default") {
                return Err(Frame::error("ERR The 'default' user cannot be removed"));
            }
            Ok(Frame::Integer(0))
        }
        "save" | "load" => Err(NO_ACL_FILE),
        _ => Err(Frame::error(
            "ERR fake-redis has only the default user: ACL SETUSER is not supported",
        )),
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
