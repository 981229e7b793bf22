//! Where a lock lives in Redis: the one place that names every key and channel.
//!
//! The layout is Redisson's, so a Rust service and a Java service using Redisson can contend for the
//! same lock. Every helper key embeds the lock's name in a `{…}` hash tag, so all keys of one lock hash
//! to one cluster slot and a script may touch them together. When the name already holds a `{`, it is
//! used as it is (`prefix:name`), as Redisson's `prefixName` does, so the user's own tag wins.

use bytes::Bytes;
use std::fmt;

/// The naming scheme: a prefix for the helper keys (`redisson` by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLayout {
    prefix: String,
}

impl Default for KeyLayout {
    fn default() -> Self {
        KeyLayout::new("redisson")
    }
}

impl KeyLayout {
    /// A layout whose helper keys start with `prefix` (`redisson` is Redisson-compatible).
    pub fn new(prefix: impl Into<String>) -> KeyLayout {
        KeyLayout {
            prefix: prefix.into(),
        }
    }

    /// The prefix of the helper keys.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The keys of the lock named `name`.
    pub fn lock(&self, name: &str) -> LockKeys {
        let tagged = |kind: &str| -> String {
            if name.contains('{') {
                format!("{}_{kind}:{name}", self.prefix)
            } else {
                format!("{}_{kind}:{{{name}}}", self.prefix)
            }
        };
        LockKeys {
            lock: Bytes::copy_from_slice(name.as_bytes()),
            channel: Bytes::from(tagged("lock__channel")),
            token: Bytes::from(tagged("lock_token")),
            unlock_latch_base: tagged("unlock_latch"),
            acquire_latch_base: tagged("acquire_latch"),
        }
    }
}

/// Every key and channel of one lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockKeys {
    /// The lock itself: a hash of owner → hold count, whose TTL is the lease.
    pub lock: Bytes,
    /// The channel an unlock publishes `0` on, to wake waiters.
    pub channel: Bytes,
    /// The fencing-token counter (a string, no TTL).
    pub token: Bytes,
    unlock_latch_base: String,
    acquire_latch_base: String,
}

impl LockKeys {
    /// The latch that makes one unlock call idempotent across its attempts.
    pub fn unlock_latch(&self, request: &RequestId) -> Bytes {
        Bytes::from(format!("{}:{request}", self.unlock_latch_base))
    }

    /// The latch that makes one acquire call idempotent across its attempts.
    pub fn acquire_latch(&self, request: &RequestId) -> Bytes {
        Bytes::from(format!("{}:{request}", self.acquire_latch_base))
    }

    /// The lock's name as text (lossy for non-UTF-8 names, which [`KeyLayout::lock`] cannot make).
    pub fn name(&self) -> String {
        String::from_utf8_lossy(&self.lock).into_owned()
    }
}

/// The id of one application-level lock or unlock call, shared by every attempt it makes.
///
/// 128 bits in lowercase hex, as Redisson's request ids. The caller draws the bits (from a seeded
/// source in simulation), so this type never touches randomness itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u128);

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// Who holds a lock: `<client_id>:<owner_id>`, the field of the lock hash.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Owner(Bytes);

impl Owner {
    /// The owner `client_id:owner_id`.
    pub fn new(client_id: &str, owner_id: u64) -> Owner {
        Owner(Bytes::from(format!("{client_id}:{owner_id}")))
    }

    /// The hash field.
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_redisson_compatible() {
        let keys = KeyLayout::default().lock("orders");
        assert_eq!(&keys.lock[..], b"orders");
        assert_eq!(&keys.channel[..], b"redisson_lock__channel:{orders}");
        assert_eq!(&keys.token[..], b"redisson_lock_token:{orders}");
        let id = RequestId(0xab);
        assert_eq!(
            &keys.unlock_latch(&id)[..],
            b"redisson_unlock_latch:{orders}:000000000000000000000000000000ab"
        );
        assert_eq!(
            &keys.acquire_latch(&id)[..],
            b"redisson_acquire_latch:{orders}:000000000000000000000000000000ab"
        );
    }

    #[test]
    fn a_name_with_its_own_hash_tag_is_not_wrapped_again() {
        let keys = KeyLayout::new("app").lock("{user1}:cart");
        assert_eq!(&keys.channel[..], b"app_lock__channel:{user1}:cart");
        assert_eq!(&keys.token[..], b"app_lock_token:{user1}:cart");
    }

    #[test]
    fn owner_is_client_colon_holder() {
        assert_eq!(Owner::new("c0ffee", 7).to_string(), "c0ffee:7");
    }
}
