//! `client-output-buffer-limit`: how much unwritten output a client may have before the server
//! closes it, per class of client, as Redis 7.0 keeps and checks them (`networking.c`,
//! `checkClientOutputBufferLimits`).
//!
//! A class has a hard limit (closed as soon as the output reaches it), and a soft limit with a
//! time (closed once the output has stayed at or above it for more than that many seconds,
//! counted in whole seconds of the server's clock, as Redis counts `server.unixtime`). A limit of
//! 0 is none. The defaults are Redis's: none for normal clients, 256 MiB hard and 64 MiB for 60 s
//! for replicas, 32 MiB hard and 8 MiB for 60 s for pub/sub clients. The server applies the
//! normal and pub/sub classes (`server/connection.rs`); the replica class is kept and shown, as
//! the fake's replicas are fed inside the engine, not over a connection.

use std::fmt;

/// One class's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes at which the client is closed at once; 0: none.
    pub hard: u64,
    /// Bytes at which the soft limit's time starts; 0: none.
    pub soft: u64,
    /// Seconds the output may stay at or above `soft`.
    pub soft_seconds: u64,
}

impl OutputLimit {
    const fn new(hard: u64, soft: u64, soft_seconds: u64) -> OutputLimit {
        OutputLimit {
            hard,
            soft,
            soft_seconds,
        }
    }
}

/// The limits of the three classes a client can have its output limited by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    /// Clients that are neither replicas nor subscribed.
    pub normal: OutputLimit,
    /// Replicas (kept and shown only: see the [module docs](self)).
    pub replica: OutputLimit,
    /// Clients with a subscription of any kind.
    pub pubsub: OutputLimit,
}

impl Default for OutputLimits {
    fn default() -> OutputLimits {
        const MB: u64 = 1024 * 1024;
        OutputLimits {
            normal: OutputLimit::new(0, 0, 0),
            replica: OutputLimit::new(256 * MB, 64 * MB, 60),
            pubsub: OutputLimit::new(32 * MB, 8 * MB, 60),
        }
    }
}

/// Why a `CONFIG SET client-output-buffer-limit` value was refused: Redis's words.
pub(crate) const WRONG_ARGUMENTS: &str = "Wrong number of arguments in buffer limit configuration.";
pub(crate) const INVALID_CLASS: &str =
    "Invalid client class specified in buffer limit configuration.";
pub(crate) const INVALID_LIMIT: &str =
    "Error in hard, soft or soft_seconds setting in buffer limit configuration.";

impl OutputLimits {
    /// The limits after `text` (groups of `<class> <hard> <soft> <soft seconds>`, the classes
    /// `normal`, `replica` or its old name `slave`, and `pubsub`) has changed the classes it
    /// names, or Redis's reason to refuse it. `parse_memory` reads a memory amount as Redis's
    /// `memtoull` does. An empty value changes nothing, as in Redis.
    pub(crate) fn updated(
        &self,
        text: &str,
        parse_memory: impl Fn(&str) -> Option<u64>,
    ) -> Result<OutputLimits, &'static str> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if !words.len().is_multiple_of(4) {
            return Err(WRONG_ARGUMENTS);
        }
        let mut limits = *self;
        for group in words.chunks(4) {
            let class = match group[0].to_ascii_lowercase().as_str() {
                "normal" => &mut limits.normal,
                "replica" | "slave" => &mut limits.replica,
                "pubsub" => &mut limits.pubsub,
                _ => return Err(INVALID_CLASS),
            };
            let hard = parse_memory(group[1]).ok_or(INVALID_LIMIT)?;
            let soft = parse_memory(group[2]).ok_or(INVALID_LIMIT)?;
            let soft_seconds = group[3]
                .parse::<i64>()
                .ok()
                .and_then(|s| u64::try_from(s).ok())
                .ok_or(INVALID_LIMIT)?;
            *class = OutputLimit::new(hard, soft, soft_seconds);
        }
        Ok(limits)
    }
}

/// As `CONFIG GET` shows them.
impl fmt::Display for OutputLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, l)) in [
            ("normal", self.normal),
            ("slave", self.replica),
            ("pubsub", self.pubsub),
        ]
        .into_iter()
        .enumerate()
        {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name} {} {} {}", l.hard, l.soft, l.soft_seconds)?;
        }
        Ok(())
    }
}

/// Where one client's unwritten output stands against its class's limits over time.
#[derive(Debug, Default)]
pub struct OutputWatch {
    /// The second (of the server's clock) the output was first seen at or above the soft limit,
    /// while it has stayed there.
    soft_since: Option<i64>,
}

impl OutputWatch {
    /// Whether a client with `used` bytes of unwritten output at `now_ms` is past `limit`:
    /// its hard limit (or `ceiling`, the most the server keeps for any client), or its soft limit
    /// for more than its seconds. Redis's rule: the first sight of the soft limit starts its time.
    pub fn over(&mut self, limit: &OutputLimit, used: u64, now_ms: i64, ceiling: u64) -> bool {
        let hard = if limit.hard == 0 {
            ceiling
        } else {
            limit.hard.min(ceiling)
        };
        if used >= hard {
            return true;
        }
        if limit.soft == 0 || used < limit.soft {
            self.soft_since = None;
            return false;
        }
        let now = now_ms.div_euclid(1000);
        match self.soft_since {
            None => {
                self.soft_since = Some(now);
                false
            }
            Some(since) => {
                let seconds = i64::try_from(limit.soft_seconds).unwrap_or(i64::MAX);
                now.saturating_sub(since) > seconds
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(s: &str) -> Option<u64> {
        s.parse().ok()
    }

    #[test]
    fn groups_change_only_the_classes_they_name() {
        let limits = OutputLimits::default()
            .updated("replica 1024 1 1 NORMAL 2 2 2", memory)
            .unwrap();
        assert_eq!(
            limits.to_string(),
            "normal 2 2 2 slave 1024 1 1 pubsub 33554432 8388608 60"
        );
        assert_eq!(limits.updated("", memory), Ok(limits));
    }

    #[test]
    fn bad_values_get_redis_reasons() {
        let d = OutputLimits::default();
        assert_eq!(d.updated("pubsub 1 1", memory), Err(WRONG_ARGUMENTS));
        assert_eq!(d.updated("master 1 1 1", memory), Err(INVALID_CLASS));
        assert_eq!(d.updated("normal x 1 1", memory), Err(INVALID_LIMIT));
        assert_eq!(d.updated("normal 1 1 -1", memory), Err(INVALID_LIMIT));
    }

    #[test]
    fn the_soft_limit_closes_only_after_its_seconds_have_passed() {
        let limit = OutputLimit::new(0, 100, 2);
        let mut watch = OutputWatch::default();
        assert!(!watch.over(&limit, 100, 10_000, u64::MAX));
        assert!(!watch.over(&limit, 150, 12_999, u64::MAX));
        assert!(watch.over(&limit, 150, 13_000, u64::MAX));
        // Dropping below resets the time.
        assert!(!watch.over(&limit, 99, 13_000, u64::MAX));
        assert!(!watch.over(&limit, 100, 14_000, u64::MAX));
        assert!(watch.over(&OutputLimit::new(0, 0, 0), 10, 0, 10));
        assert!(watch.over(&OutputLimit::new(50, 0, 0), 50, 0, u64::MAX));
    }
}
