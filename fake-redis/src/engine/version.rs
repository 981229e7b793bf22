//! The server release the fake imitates, chosen when an engine is made.
//!
//! People run more than one Redis: the 7.0 line the fake was first measured against, 7.4, and
//! Valkey, which forked from 7.2 and answers some things differently. Each knows its own set of
//! commands and tells clients who it is (`INFO`, `HELLO`, a script's `redis.REDIS_VERSION`). The
//! engine owns the choice, so every layer above it (the command table, Lua, the servers, the
//! test handle) reads one answer, and two engines of one process may imitate different releases.

use std::fmt;

/// The release whose replies, errors and command set an engine imitates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Version {
    /// Redis 7.0 (the replies of redis-server 7.0.15): the default, the release every reply of
    /// the fake was first compared with.
    #[default]
    V7_0,
    /// Redis 7.4 (the replies of redis-server 7.4.1).
    V7_4,
    /// Valkey 9.1 (the replies of valkey-server 9.1.2).
    Valkey9_1,
}

impl Version {
    /// Every version, in the order of [`Version::index`].
    pub const ALL: [Version; 3] = [Version::V7_0, Version::V7_4, Version::Valkey9_1];

    /// A small number per version (0, 1, 2), for tables kept per version.
    pub const fn index(self) -> usize {
        match self {
            Version::V7_0 => 0,
            Version::V7_4 => 1,
            Version::Valkey9_1 => 2,
        }
    }

    /// The name the server binary's `--server-version` takes: `redis-7.0`, `redis-7.4`,
    /// `valkey-9.1`.
    pub const fn name(self) -> &'static str {
        match self {
            Version::V7_0 => "redis-7.0",
            Version::V7_4 => "redis-7.4",
            Version::Valkey9_1 => "valkey-9.1",
        }
    }

    /// What `INFO`'s `redis_version` and a script's `redis.REDIS_VERSION` say. Valkey keeps
    /// answering the Redis release it forked from (7.2.4), so that clients that gate features by
    /// it keep working; its own release is [`Version::valkey_version`].
    pub const fn redis_version(self) -> &'static str {
        match self {
            Version::V7_0 => "7.0.15",
            Version::V7_4 => "7.4.1",
            Version::Valkey9_1 => "7.2.4",
        }
    }

    /// [`Version::redis_version`] as `0x00MMmmpp`, as a script's `redis.REDIS_VERSION_NUM`.
    pub const fn redis_version_num(self) -> i64 {
        match self {
            Version::V7_0 => 0x00_07_00_0f,
            Version::V7_4 => 0x00_07_04_01,
            Version::Valkey9_1 => 0x00_07_02_04,
        }
    }

    /// Valkey's own release as `0x00MMmmpp` (a script's `redis.VALKEY_VERSION_NUM`); Redis's
    /// otherwise.
    pub const fn server_version_num(self) -> i64 {
        match self {
            Version::Valkey9_1 => 0x00_09_01_02,
            _ => self.redis_version_num(),
        }
    }

    /// Valkey's own release (`INFO`'s `valkey_version`), None for Redis.
    pub const fn valkey_version(self) -> Option<&'static str> {
        match self {
            Version::Valkey9_1 => Some("9.1.2"),
            _ => None,
        }
    }

    /// Whether the server is Valkey.
    pub const fn is_valkey(self) -> bool {
        matches!(self, Version::Valkey9_1)
    }

    /// The release `HELLO` reports as `version`: Valkey's own, Redis's otherwise.
    pub const fn server_version(self) -> &'static str {
        match self.valkey_version() {
            Some(v) => v,
            None => self.redis_version(),
        }
    }

    /// Whether ACL rules are described as they were given, in order (Redis 7.2's retained
    /// command rules, kept by Valkey), rather than computed from the permissions as 7.0 does.
    pub const fn retains_acl_rules(self) -> bool {
        !matches!(self, Version::V7_0)
    }

    /// Whether a user starts with the `sanitize-payload` flag (Redis 7.2 to 7.4 set it when
    /// they create a user; 7.0 and Valkey leave it unset).
    pub const fn sanitizes_new_users(self) -> bool {
        matches!(self, Version::V7_4)
    }

    /// The server's name (`HELLO`'s `server`).
    pub const fn server_name(self) -> &'static str {
        match self {
            Version::Valkey9_1 => "valkey",
            _ => "redis",
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Version, String> {
        Version::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("the server version is one of redis-7.0, redis-7.4, valkey-9.1, not {s:?}")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indexes_follow_all() {
        for (i, v) in Version::ALL.into_iter().enumerate() {
            assert_eq!(v.index(), i);
            assert_eq!(v.name().parse::<Version>(), Ok(v));
        }
        assert!("redis-7.2".parse::<Version>().is_err());
    }

    #[test]
    fn version_numbers_match_the_texts() {
        for v in Version::ALL {
            let parts: Vec<i64> = v
                .redis_version()
                .split('.')
                .map(|p| p.parse().unwrap())
                .collect();
            assert_eq!(
                v.redis_version_num(),
                (parts[0] << 16) | (parts[1] << 8) | parts[2]
            );
        }
    }
}
