//! `ACL LOG`: the refusals a server remembers, newest first, as Redis 7.0's `addACLLogEntry`
//! keeps them. A refusal like one of the ten newest (same reason, context, object and user,
//! within a minute of it) is counted in that entry, which moves to the front; at most
//! `acllog-max-len` entries stay. Times are the engine's clock, so `age-seconds` moves with it.

use crate::resp::Frame;
use bytes::Bytes;
use std::collections::VecDeque;

/// Where a refused call came from (`ACL LOG`'s `context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Context {
    /// A client's own call.
    TopLevel,
    /// A call inside `MULTI`, refused when queued or when `EXEC` runs it.
    Multi,
    /// A script's `redis.call`.
    Lua,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::TopLevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One entry.
pub(crate) struct Entry {
    pub count: u64,
    /// `command`, `key`, `channel` or `auth`.
    pub reason: &'static str,
    pub context: Context,
    /// The command's full name, the key or channel refused, or the `AUTH`/`HELLO` as sent.
    pub object: Bytes,
    pub username: Bytes,
    /// When it last happened, unix ms.
    pub at: i64,
    /// The client's `CLIENT LIST` line then.
    pub client_info: Bytes,
}

impl Entry {
    /// A new entry (counted once) for a refusal at `at`; its client's line is filled in when it
    /// is logged.
    pub fn new(
        reason: &'static str,
        context: Context,
        object: Bytes,
        username: Bytes,
        at: i64,
    ) -> Entry {
        Entry {
            count: 1,
            reason,
            context,
            object,
            username,
            at,
            client_info: Bytes::new(),
        }
    }
}

/// How far apart two refusals may be and still share an entry (Redis's
/// `ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_MS: i64 = 60_000;

/// The log.
#[derive(Default)]
pub(crate) struct Log {
    entries: VecDeque<Entry>,
}

impl Log {
    /// Records `entry` (its `count` is 1), keeping at most `max_len` entries.
    pub fn add(&mut self, entry: Entry, max_len: usize) {
        let same = self.entries.iter().take(10).position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && entry.at - e.at <= GROUPING_MS
                && e.object == entry.object
                && e.username == entry.username
        });
        if let Some(at) = same {
            let mut known = self.entries.remove(at).expect("found above");
            known.count += 1;
            known.at = entry.at;
            known.client_info = entry.client_info;
            self.entries.push_front(known);
            return;
        }
        self.entries.push_front(entry);
        self.entries.truncate(max_len);
    }

    /// `ACL LOG RESET`.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// `ACL LOG [count]`: the newest `count` entries at time `now`.
    pub fn reply(&self, count: usize, now: i64) -> Frame {
        let field = |name: &'static str| Frame::Bulk(Bytes::from_static(name.as_bytes()));
        Frame::Array(
            self.entries
                .iter()
                .take(count)
                .map(|e| {
                    Frame::Map(vec![
                        (field("count"), Frame::Integer(e.count as i64)),
                        (field("reason"), field(e.reason)),
                        (field("context"), field(e.context.name())),
                        (field("object"), Frame::Bulk(e.object.clone())),
                        (field("username"), Frame::Bulk(e.username.clone())),
                        (
                            field("age-seconds"),
                            Frame::Double((now - e.at) as f64 / 1000.0),
                        ),
                        (field("client-info"), Frame::Bulk(e.client_info.clone())),
                    ])
                })
                .collect(),
        )
    }
}
