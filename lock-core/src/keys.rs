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

    /// A helper key or channel of the lock `name`: `<prefix>_<kind>:{name}`, or `…:name` when
    /// the name holds its own hash tag.
    fn tagged(&self, kind: &str, name: &str) -> String {
        if name.contains('{') {
            format!("{}_{kind}:{name}", self.prefix)
        } else {
            format!("{}_{kind}:{{{name}}}", self.prefix)
        }
    }

    /// The keys of the fair lock named `name`: the lock's own, its waiters' queue and their
    /// timeouts (Redisson's `RFairLock`).
    pub fn fair_lock(&self, name: &str) -> FairKeys {
        FairKeys {
            lock: self.lock(name),
            queue: Bytes::from(self.tagged("lock_queue", name)),
            timeouts: Bytes::from(self.tagged("lock_timeout", name)),
        }
    }

    /// The keys of the read-write lock named `name` (Redisson's `RReadWriteLock`): the lock's
    /// own hash, the channel its releases publish on, and the prefix of its read holds' timeout
    /// keys.
    pub fn read_write(&self, name: &str) -> ReadWriteKeys {
        // Redisson's `suffixName`: the name in a hash tag of its own, unless it holds one.
        let key_prefix = if name.contains('{') {
            name.to_owned()
        } else {
            format!("{{{name}}}")
        };
        ReadWriteKeys {
            lock: self.lock(name),
            channel: Bytes::from(self.tagged("rwlock", name)),
            key_prefix: Bytes::from(key_prefix),
        }
    }

    /// The keys of the lock named `name`.
    pub fn lock(&self, name: &str) -> LockKeys {
        let tagged = |kind: &str| self.tagged(kind, name);
        LockKeys {
            lock: Bytes::copy_from_slice(name.as_bytes()),
            channel: Bytes::from(tagged("lock__channel")),
            token: Bytes::from(tagged("lock_token")),
            unlock_latch_base: Bytes::from(tagged("unlock_latch")),
            acquire_latch_base: Bytes::from(tagged("acquire_latch")),
        }
    }
}

/// Every key and channel of one lock.
///
/// Every part is a [`Bytes`], so a clone shares the names rather than copying them: the lock
/// machine builds them once per lock name and hands out clones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockKeys {
    /// The lock itself: a hash of owner → hold count, whose TTL is the lease.
    pub lock: Bytes,
    /// The channel an unlock publishes `0` on, to wake waiters.
    pub channel: Bytes,
    /// The fencing-token counter (a string, no TTL).
    pub token: Bytes,
    unlock_latch_base: Bytes,
    acquire_latch_base: Bytes,
}

impl LockKeys {
    /// The latch that makes one unlock call idempotent across its attempts.
    pub fn unlock_latch(&self, request: &RequestId) -> Bytes {
        latch(&self.unlock_latch_base, request)
    }

    /// The latch that makes one acquire call idempotent across its attempts.
    pub fn acquire_latch(&self, request: &RequestId) -> Bytes {
        latch(&self.acquire_latch_base, request)
    }

    /// The lock's name as text (lossy for non-UTF-8 names, which [`KeyLayout::lock`] cannot make).
    pub fn name(&self) -> String {
        match std::str::from_utf8(&self.lock) {
            Ok(name) => name.to_owned(),
            Err(_) => String::from_utf8_lossy(&self.lock).into_owned(),
        }
    }
}

/// `<base>:<request id>`, the request id in 32 lowercase hex digits.
fn latch(base: &[u8], request: &RequestId) -> Bytes {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut key = Vec::with_capacity(base.len() + 33);
    key.extend_from_slice(base);
    key.push(b':');
    // A byte at a time, both its digits from one table: shifting the whole 128-bit id once per
    // digit cost more than the rest of the latch's making.
    const PAIRS: [[u8; 2]; 256] = {
        let mut pairs = [[0u8; 2]; 256];
        let mut byte = 0;
        while byte < 256 {
            pairs[byte] = [HEX[byte >> 4], HEX[byte & 0xf]];
            byte += 1;
        }
        pairs
    };
    let mut digits = [[0u8; 2]; 16];
    for (pair, byte) in digits.iter_mut().zip(request.0.to_be_bytes()) {
        *pair = PAIRS[usize::from(byte)];
    }
    key.extend_from_slice(digits.as_flattened());
    Bytes::from(key)
}

/// Every key and channel of one fair lock: a lock's, and the queue that orders its waiters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairKeys {
    /// The lock's own keys: its hash, channel and latches are a plain lock's.
    pub lock: LockKeys,
    /// The waiters in arrival order: a list of owners.
    pub queue: Bytes,
    /// Each waiter's deadline to ask again before it is dropped: a sorted set of owners, scored
    /// in unix milliseconds.
    pub timeouts: Bytes,
}

impl FairKeys {
    /// The channel a release wakes `owner` on when it is the queue's head:
    /// `<lock's channel>:<owner>`.
    pub fn waiter_channel(&self, owner: &Owner) -> Bytes {
        let mut channel = Vec::with_capacity(self.lock.channel.len() + 1 + owner.0.len());
        channel.extend_from_slice(&self.lock.channel);
        channel.push(b':');
        channel.extend_from_slice(&owner.0);
        Bytes::from(channel)
    }
}

/// Every key and channel of one read-write lock.
///
/// Its hash holds the field `mode` (`read` or `write`), a field per read owner (`<owner>`) and per
/// write owner (`<owner>:write`) with that owner's count. Each read count `n` of an owner also has
/// a key of its own, `<key prefix>:<owner>:rwlock_timeout:<n>`, whose TTL is that count's lease,
/// so that the hash lives as long as the longest read hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadWriteKeys {
    /// The lock's own keys: its hash and latches are a plain lock's (its `channel` is unused).
    pub lock: LockKeys,
    /// The channel every release of the lock publishes on: `<prefix>_rwlock:{name}`.
    pub channel: Bytes,
    /// `{name}` (or the name itself when it holds a hash tag): the start of the timeout keys.
    pub key_prefix: Bytes,
}

impl ReadWriteKeys {
    /// The prefix of `owner`'s read-hold timeout keys: `<key prefix>:<owner>:rwlock_timeout`
    /// (the count follows, after a `:`).
    pub fn timeout_prefix(&self, owner: &Owner) -> Bytes {
        let mut key = Vec::with_capacity(self.key_prefix.len() + owner.0.len() + 16);
        key.extend_from_slice(&self.key_prefix);
        key.push(b':');
        key.extend_from_slice(&owner.0);
        key.extend_from_slice(b":rwlock_timeout");
        Bytes::from(key)
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
        // Written by hand: the machine names an owner at every acquire, and the formatting
        // machinery cost more than the rest of the name's making. The digits go first into a
        // buffer on the stack, so that the field is allocated at its exact length: a `Vec` with
        // room to spare becomes a `Bytes` only through a second allocation.
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = owner_id;
        // Two digits per division, then the last one or two.
        while rest >= 100 {
            let pair = (rest % 100) as u8;
            rest /= 100;
            at -= 2;
            digits[at] = b'0' + pair / 10;
            digits[at + 1] = b'0' + pair % 10;
        }
        if rest >= 10 {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        at -= 1;
        digits[at] = b'0' + rest as u8;
        let mut field = Vec::with_capacity(client_id.len() + 1 + digits.len() - at);
        field.extend_from_slice(client_id.as_bytes());
        field.push(b':');
        field.extend_from_slice(&digits[at..]);
        Owner(Bytes::from(field))
    }

    /// The hash field.
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// The same holder as a read-write lock's writer: `<owner>:write`, the field of its write
    /// count (its read counts are under the owner itself).
    pub fn writer(&self) -> Owner {
        let mut field = Vec::with_capacity(self.0.len() + 6);
        field.extend_from_slice(&self.0);
        field.extend_from_slice(b":write");
        Owner(Bytes::from(field))
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

/// The cluster slot of `key`, as Redis computes it: CRC16 (XMODEM) of the key's hash tag (the bytes
/// between its first `{` and the next `}`, if there are any) or of the whole key, modulo 16,384.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16_xmodem(hashed) % 16384
}

pub(crate) fn crc16_xmodem(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_the_client_id_a_colon_and_the_owner_id_in_decimal() {
        for id in [0, 1, 9, 10, 42, 1_000_000, u64::MAX] {
            let owner = Owner::new("5f1c0a3e", id);
            assert_eq!(&owner.as_bytes()[..], format!("5f1c0a3e:{id}").as_bytes());
        }
    }

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
    fn a_latch_names_its_request_in_32_hex_digits() {
        let keys = KeyLayout::default().lock("orders");
        for id in [
            0,
            1,
            0xab,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            let expected = format!("redisson_unlock_latch:{{orders}}:{id:032x}");
            assert_eq!(&keys.unlock_latch(&RequestId(id))[..], expected.as_bytes());
        }
    }

    #[test]
    fn fair_names_are_redisson_compatible() {
        let keys = KeyLayout::default().fair_lock("orders");
        assert_eq!(&keys.lock.lock[..], b"orders");
        assert_eq!(&keys.queue[..], b"redisson_lock_queue:{orders}");
        assert_eq!(&keys.timeouts[..], b"redisson_lock_timeout:{orders}");
        assert_eq!(
            &keys.waiter_channel(&Owner::new("c0ffee", 7))[..],
            b"redisson_lock__channel:{orders}:c0ffee:7"
        );
        let tagged = KeyLayout::default().fair_lock("{user1}:cart");
        assert_eq!(&tagged.queue[..], b"redisson_lock_queue:{user1}:cart");
    }

    #[test]
    fn read_write_names_are_redisson_compatible() {
        let keys = KeyLayout::default().read_write("orders");
        assert_eq!(&keys.lock.lock[..], b"orders");
        assert_eq!(&keys.channel[..], b"redisson_rwlock:{orders}");
        let owner = Owner::new("c0ffee", 7);
        assert_eq!(
            &keys.timeout_prefix(&owner)[..],
            b"{orders}:c0ffee:7:rwlock_timeout"
        );
        assert_eq!(owner.writer().to_string(), "c0ffee:7:write");
        let tagged = KeyLayout::default().read_write("{user1}:cart");
        assert_eq!(&tagged.channel[..], b"redisson_rwlock:{user1}:cart");
        assert_eq!(
            &tagged.timeout_prefix(&owner)[..],
            b"{user1}:cart:c0ffee:7:rwlock_timeout"
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
