//! A script's shebang (`#!lua flags=no-writes,allow-oom`), as Redis 7.0 reads it: the flags that
//! decide, before a script runs, whether `maxmemory` or `CLIENT PAUSE WRITE` holds it back, and
//! that the script's run then enforces. Pure parsing, so the checks work with or without the
//! embedded Lua (feature `lua`).

use crate::resp::Frame;

/// The shebang flags of a script (`#!lua flags=…`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// The body starts with `#!lua`: flags are declared rather than implied.
    pub shebang: bool,
    /// `no-writes`.
    pub no_writes: bool,
    /// `no-cluster`: refused on a cluster node.
    pub no_cluster: bool,
    /// `allow-oom`: its calls may grow memory past `maxmemory` (`engine/evict.rs`).
    pub allow_oom: bool,
}

/// The flags `body` declares in its shebang, for the checks Redis makes before a script runs
/// (`maxmemory`, `CLIENT PAUSE WRITE`): `None` without a shebang, or with one Redis refuses to
/// run, where the command's own table flags decide instead (Redis's `evalGetCommandFlags`).
pub(crate) fn declared_flags(body: &[u8]) -> Option<Flags> {
    parse(body)
        .ok()
        .map(|(flags, _)| flags)
        .filter(|flags| flags.shebang)
}

/// The flags of `body`'s shebang and the code to compile: the shebang line is cut but its line
/// break kept, so line numbers stay the user's.
pub(crate) fn parse(body: &[u8]) -> Result<(Flags, &[u8]), Frame> {
    if !body.starts_with(b"#!") {
        return Ok((Flags::default(), body));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err(Frame::error("ERR Invalid script shebang"));
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(Frame::error_owned(format!(
            "ERR Unexpected engine in script shebang: {engine}"
        )));
    }
    let mut flags = Flags {
        shebang: true,
        ..Flags::default()
    };
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(Frame::error_owned(format!(
                "ERR Unknown lua shebang option: {part}"
            )));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => flags.no_writes = true,
                "no-cluster" => flags.no_cluster = true,
                "allow-oom" => flags.allow_oom = true,
                // No stale replica, and Redis 7.0 checks no slot of an undeclared key against
                // the declared ones: these change nothing it can see.
                "allow-stale" | "allow-cross-slot-keys" => {}
                _ => {
                    return Err(Frame::error_owned(format!(
                        "ERR Unexpected flag in script shebang: {flag}"
                    )));
                }
            }
        }
    }
    Ok((flags, &body[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_parse_as_redis_s() {
        assert_eq!(parse(b"return 1").unwrap().0, Flags::default());
        let (flags, code) = parse(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(flags.shebang && flags.no_writes);
        assert_eq!(code, b"\nreturn 1");
        assert_eq!(
            parse(b"#!lua flags=bogus\nreturn 1").unwrap_err(),
            Frame::error("ERR Unexpected flag in script shebang: bogus")
        );
        assert_eq!(
            parse(b"#!lua").unwrap_err(),
            Frame::error("ERR Invalid script shebang")
        );
    }
}
