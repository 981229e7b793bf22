//! Keyspace notifications: what a write publishes on `__keyspace@<db>__:<key>` and
//! `__keyevent@<db>__:<event>` when `notify-keyspace-events` asks for it.
//!
//! A command names its event through [`Cx::notify`](crate::cmd::Cx::notify) (one line after its
//! write, as Redis's `notifyKeyspaceEvent` calls are), and the message goes through
//! [`Engine::publish`], so subscribers get it through the same outboxes, with the same delivery
//! faults, as any `PUBLISH`. Expiry removes keys deep in the keyspace (lazily on a lookup, or in
//! the active cycle), where the engine is out of reach: the keyspace keeps the names of the keys
//! it expired while `expired` events are on, and the engine publishes them, on the time of the
//! command or the cycle that removed them, before the command's own events, as in Redis. With
//! notifications off (the default) a write pays one test of a flag.

use super::Engine;
use crate::cmd::class;

/// Whether `flags` ask for `expired` events on either kind of channel.
pub(crate) fn wants_expired(flags: u16) -> bool {
    flags & class::EXPIRED != 0 && flags & (class::KEYSPACE | class::KEYEVENT) != 0
}

impl Engine {
    /// Publishes event `event` of class `class` on `key` of database `db`, if
    /// `notify-keyspace-events` asks for its class.
    #[inline]
    pub(crate) fn notify(&mut self, class: u16, event: &str, key: &[u8], db: usize, now: i64) {
        let flags = self.config().notify_keyspace_events;
        if flags & class == 0 {
            return;
        }
        self.notify_expired(now);
        self.publish_event(flags, event, key, db, now);
    }

    fn publish_event(&mut self, flags: u16, event: &str, key: &[u8], db: usize, now: i64) {
        if flags & class::KEYSPACE != 0 {
            let channel = [format!("__keyspace@{db}__:").as_bytes(), key].concat();
            self.publish(&channel, event.as_bytes(), now);
        }
        if flags & class::KEYEVENT != 0 {
            let channel = format!("__keyevent@{db}__:{event}");
            self.publish(channel.as_bytes(), key, now);
        }
    }

    /// Publishes `expired` for every key expiry removed since the last call.
    pub(crate) fn notify_expired(&mut self, now: i64) {
        let flags = self.config().notify_keyspace_events;
        if !wants_expired(flags) {
            return;
        }
        for db in 0..self.dbs().len() {
            let keys = match &mut self.db_mut(db).watches.expired_log {
                Some(log) if !log.is_empty() => std::mem::take(log),
                _ => continue,
            };
            for key in keys {
                self.publish_event(flags, "expired", &key, db, now);
            }
        }
    }
}
